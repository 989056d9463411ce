"""The on-disk cache of prepared training examples: a hit gives the same examples, any change misses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kgqa.config import EmbedderSettings
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.store.kglite_store import KgliteStore
from retriever_training import example_cache
from retriever_training.example_cache import cache_key, cached_examples, kb_fingerprint
from retriever_training.examples import TrainingExample, build_examples
from tests.conftest import FakeEmbedder, toy_examples

SETTINGS = {"subgraph": {"hops": 2}, "oracle_hops": False}


def _tables(store: KgliteStore, embedder: FakeEmbedder) -> tuple[EntityTable, RelationTable]:
    return EntityTable(store, embedder.dimension), RelationTable(store)


def test_second_call_reads_the_cache_and_gives_the_same_examples(
    toy_kg: KgliteStore, fake_embedder: FakeEmbedder, tmp_path: Path
) -> None:
    builds: list[int] = []

    def build(tables: tuple[EntityTable, RelationTable]) -> list[TrainingExample]:
        builds.append(1)
        return build_examples(toy_kg, fake_embedder, toy_examples(), tables, SubgraphSettings(hops=2))

    path = tmp_path / "cache" / "train.pt"
    first_tables = _tables(toy_kg, fake_embedder)
    first, hit = cached_examples(path, first_tables, lambda: build(first_tables))
    assert not hit and path.is_file() and len(first) > 0
    # A fresh table, filled in another order, as in a new process.
    second_tables = _tables(toy_kg, fake_embedder)
    second_tables[0].rows(["Steven Spielberg", "1994"])
    second, hit = cached_examples(path, second_tables, lambda: build(second_tables))
    assert hit and len(builds) == 1 and len(second) == len(first)
    for a, b in zip(first, second, strict=True):
        assert a.example == b.example
        assert torch.equal(a.labels, b.labels) and torch.equal(a.answers, b.answers)
        assert torch.equal(a.prepared.dde, b.prepared.dde)
        assert a.prepared.subgraph.entity_ids == b.prepared.subgraph.entity_ids
        # rows differ between the tables, the embeddings they point at do not
        assert torch.equal(
            first_tables[0].matrix[a.prepared.entity_rows], second_tables[0].matrix[b.prepared.entity_rows]
        )
        relations = (first_tables[1].matrix, second_tables[1].matrix)
        assert torch.equal(relations[0][a.prepared.relation_rows], relations[1][b.prepared.relation_rows])


def test_key_changes_with_questions_settings_embedder_and_kb(toy_kg: KgliteStore) -> None:
    kb = kb_fingerprint(toy_kg)
    questions = toy_examples()
    base = cache_key(kb, EmbedderSettings(), questions, SETTINGS)
    assert base == cache_key(kb_fingerprint(toy_kg), EmbedderSettings(), toy_examples(), SETTINGS)
    edited = [replace(questions[0], answers=("Someone Else",)), *questions[1:]]
    others = [
        cache_key(kb, EmbedderSettings(), edited, SETTINGS),
        cache_key(kb, EmbedderSettings(), questions[:-1], SETTINGS),
        cache_key(kb, EmbedderSettings(), questions, {**SETTINGS, "oracle_hops": True}),
        cache_key(kb, EmbedderSettings(dtype="float32"), questions, SETTINGS),
        cache_key({**kb, "labels": {}}, EmbedderSettings(), questions, SETTINGS),
    ]
    assert base not in others and len(set(others)) == len(others)
    # batching does not change a vector's meaning: it is not part of the key
    assert base == cache_key(kb, EmbedderSettings(batch_size=8, batch_tokens=512), questions, SETTINGS)


def test_key_changes_when_a_pickled_example_class_gains_a_field(
    toy_kg: KgliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, questions = kb_fingerprint(toy_kg), toy_examples()
    base = cache_key(kb, EmbedderSettings(), questions, SETTINGS)
    names = example_cache._fields()
    names["PreparedQuestion"] = [*names["PreparedQuestion"], "a_new_slot"]
    monkeypatch.setattr(example_cache, "_fields", lambda: names)
    assert cache_key(kb, EmbedderSettings(), questions, SETTINGS) != base


def test_unreadable_cache_is_rebuilt(
    toy_kg: KgliteStore, fake_embedder: FakeEmbedder, tmp_path: Path
) -> None:
    path = tmp_path / "train.pt"
    path.write_bytes(b"not a torch file")
    tables = _tables(toy_kg, fake_embedder)
    settings = SubgraphSettings()
    examples, hit = cached_examples(
        path, tables, lambda: build_examples(toy_kg, fake_embedder, toy_examples(), tables, settings)
    )
    assert not hit and examples
    assert cached_examples(path, tables, lambda: [])[1]


def test_examples_prepared_on_threads_equal_those_prepared_on_one(
    toy_kg: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    settings = SubgraphSettings(hops=2)
    one = build_examples(toy_kg, fake_embedder, toy_examples(), _tables(toy_kg, fake_embedder), settings)
    many = build_examples(
        toy_kg, fake_embedder, toy_examples(), _tables(toy_kg, fake_embedder), settings, embed_threads=4
    )
    assert len(one) == len(many) == len(toy_examples())
    for a, b in zip(one, many, strict=True):
        assert a.example == b.example
        for name in ("head", "rel", "tail", "topic"):
            assert torch.equal(getattr(a.prepared.subgraph, name), getattr(b.prepared.subgraph, name))
        assert a.prepared.subgraph.entity_ids == b.prepared.subgraph.entity_ids
        assert torch.equal(a.labels, b.labels) and torch.equal(a.answers, b.answers)
        assert torch.equal(a.prepared.dde, b.prepared.dde)
