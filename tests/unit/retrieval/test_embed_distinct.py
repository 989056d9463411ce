"""A question's repeated planner views are encoded once and given back in every place."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kgqa.retrieval.models.plans import question_views
from kgqa.retrieval.retriever import embed_distinct
from tests.conftest import FakeEmbedder


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[str] = []

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        self.encoded += texts
        return super().embed(texts)


def test_repeated_views_are_encoded_once_in_input_order() -> None:
    views = question_views("which person directed the movies written by jon cleary", ["Jon Cleary"])
    assert len(views) == 6 and len(set(views)) == 3  # "." three times, the text before twice
    embedder = CountingEmbedder()
    vectors = embed_distinct(embedder, views)
    assert sorted(embedder.encoded) == sorted(set(views))
    assert torch.equal(vectors, FakeEmbedder().embed(views))


def test_distinct_views_are_encoded_as_they_are() -> None:
    views = ["a b", "c", "d e f"]
    embedder = CountingEmbedder()
    assert torch.equal(embed_distinct(embedder, views), FakeEmbedder().embed(views))
    assert embedder.encoded == views
