"""Embedding a store: a re-embed stopped part way is refused at query time until finished or rolled back."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
from conftest import FakeEmbedder

from ingest.embedding import embed_store
from kgqa.errors import SchemaMismatchError, StoreMemoryError
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.schema import check_query_embedder, count_pending_entities
from kgqa.types import EmbeddingMeta

OLD = EmbeddingMeta("fake-hash-16", 16)
NEW = EmbeddingMeta("fake-other-16", 16)


class KilledAfter(FakeEmbedder):
    """An embedder whose process is killed (KeyboardInterrupt) on its n-th batch."""

    def __init__(self, batches: int, model_id: str) -> None:
        super().__init__(model_id=model_id)
        self.batches = batches

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        if self.calls + 1 == self.batches:
            raise KeyboardInterrupt("killed")
        return super().embed(texts)


def test_stopped_reembed_is_refused_until_resumed_to_completion(toy_kg: KgliteStore) -> None:
    with pytest.raises(KeyboardInterrupt):
        embed_store(toy_kg, KilledAfter(2, NEW.model_id), reembed=True, page_size=2)
    left = count_pending_entities(toy_kg, NEW.model_id)
    assert left > 0
    with pytest.raises(SchemaMismatchError, match=f"did not finish: {left} entities") as info:
        check_query_embedder(toy_kg, NEW)
    assert f"kgqa embed --model {NEW.model_id}" in (info.value.hint or "")
    with pytest.raises(SchemaMismatchError, match="was embedded with 'fake-other-16'"):
        check_query_embedder(toy_kg, OLD)
    with pytest.raises(SchemaMismatchError):  # a plain embed with the old model does not revert silently
        embed_store(toy_kg, FakeEmbedder())

    report = embed_store(toy_kg, FakeEmbedder(model_id=NEW.model_id))

    assert report.entities_embedded == left
    check_query_embedder(toy_kg, NEW)


def test_stopped_reembed_rolls_back_with_a_reembed_to_the_old_model(toy_kg: KgliteStore) -> None:
    with pytest.raises(KeyboardInterrupt):
        embed_store(toy_kg, KilledAfter(2, NEW.model_id), reembed=True, page_size=2)

    embed_store(toy_kg, FakeEmbedder(), reembed=True)

    check_query_embedder(toy_kg, OLD)


class SmallMemoryStore:
    """The embedded store behind a server whose transaction memory holds ``max_rows`` vectors."""

    def __init__(self, inner: KgliteStore, max_rows: int) -> None:
        self.inner, self.max_rows = inner, max_rows
        self.backend, self.mapping = inner.backend, inner.mapping
        self.pages: list[int] = []

    def run(self, query, params=None):  # type: ignore[no-untyped-def]
        return self.inner.run(query, params)

    def write(self, statements):  # type: ignore[no-untyped-def]
        vectors = [st for st in statements if st.query.name.startswith("embed_set")]
        rows = sum(len(st.params["rows"]) for st in vectors)
        if rows > self.max_rows:
            raise StoreMemoryError("Neo4j ran out of transaction memory")
        self.pages.append(rows)
        return self.inner.write(statements)


def test_a_vector_page_the_server_has_no_memory_for_is_written_in_halves(toy_kg: KgliteStore) -> None:
    embedder = FakeEmbedder(model_id="fake-other-16")
    store = SmallMemoryStore(toy_kg, max_rows=3)
    report = embed_store(store, embedder, reembed=True)  # type: ignore[arg-type]
    entities = count_pending_entities(toy_kg, "no-such-model")
    assert report.entities_embedded == entities and max(store.pages) <= 3 < entities
    assert count_pending_entities(toy_kg, embedder.model_id) == 0
