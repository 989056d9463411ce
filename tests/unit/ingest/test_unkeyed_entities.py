"""Entities kgqa cannot key (no id property, or an id that is not a string; with or without a
name): ``prepare`` and ``embed`` skip and count them instead of looping, and ``ask`` is not
refused because of them (issue 29, blocker 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FakeEmbedder

from ingest.embedding import embed_store
from ingest.prepare import prepare_store
from kgqa.errors import SchemaMismatchError, StoreError
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.schema import check_query_embedder, count_entities, embedding_complete
from kgqa.store.stats import collect_stats
from kgqa.types import EmbeddingMeta
from tests.mapped_graph import MAPPING, USER_GRAPH
from tests.unit.ingest.test_embedding import KilledAfter

ODD_NODES = """
CREATE (:`Film Thing` {title: 'no id at all'}),
       (:`Film Thing` {uid: 42}),
       (:`Film Thing` {uid: 7, title: 'a number id'}),
       (:`Film Thing` {uid: ['m1'], title: 'a list id'}),
       (:`Film Thing` {uid: 'bare'})
"""


def test_prepare_and_embed_skip_unkeyed_entities_and_ask_is_not_refused(
    tmp_path: Path, fake_embedder: Any
) -> None:
    store = KgliteStore(tmp_path / "odd.kgl", mapping=MAPPING)
    store.graph.cypher(USER_GRAPH)
    store.graph.cypher(ODD_NODES)

    report = prepare_store(store)
    # 'bare' has a name too: kglite gives every node a title (Neo4j leaves it null; then it is
    # embedded by its id)
    assert report.names_normalised == 5 and report.entities_skipped == 4
    embedded = embed_store(store, fake_embedder)

    # the four user entities and 'bare', nothing else
    assert embedded.entities_embedded == 5 and embedded.entities_skipped == 4
    assert count_entities(store, fake_embedder.model_id).pending == 0
    assert embedding_complete(store) is True
    check_query_embedder(store, EmbeddingMeta(fake_embedder.model_id, fake_embedder.dimension))
    stats = collect_stats(store)
    assert (stats.embedded_entities, stats.unkeyed_entities) == (5, 4)
    assert stats.to_dict()["unkeyed_entities"] == 4
    assert embed_store(store, fake_embedder).entities_embedded == 0  # a re-run ends at once


def test_embed_on_kgqa_own_model_skips_a_node_without_id(toy_kg: KgliteStore, fake_embedder: Any) -> None:
    toy_kg.graph.cypher("CREATE (:Entity {name: 'orphan'}), (:Entity {id: 5})")
    report = embed_store(toy_kg, fake_embedder)
    assert report.entities_skipped == 2 and count_entities(toy_kg, fake_embedder.model_id).pending == 0
    check_query_embedder(toy_kg, EmbeddingMeta(fake_embedder.model_id, fake_embedder.dimension))


class SetterWritesNothing:
    """A store whose vector setter matches nothing (what an id-less entity did before the fix)."""

    def __init__(self, inner: KgliteStore) -> None:
        self.inner, self.backend, self.mapping = inner, inner.backend, inner.mapping

    def run(self, query, params=None):  # type: ignore[no-untyped-def]
        return self.inner.run(query, params)

    def write(self, statements):  # type: ignore[no-untyped-def]
        return self.inner.write([s for s in statements if not s.query.name.startswith("embed_set")])


def test_embed_stops_with_an_error_when_written_rows_stay_pending(toy_kg: KgliteStore) -> None:
    other = FakeEmbedder(model_id="fake-other-16")
    with pytest.raises(StoreError, match="still pending after their embeddings were written"):
        embed_store(SetterWritesNothing(toy_kg), other, reembed=True)  # type: ignore[arg-type]


def test_a_stopped_embedding_is_counted_at_ask_and_a_finished_one_is_not(
    toy_kg: KgliteStore, fake_embedder: Any
) -> None:
    meta = EmbeddingMeta(fake_embedder.model_id, fake_embedder.dimension)
    toy_kg.graph.cypher("CREATE (:Entity {id: 'late', name: 'added after embedding'})")
    embed_store(toy_kg, FakeEmbedder(model_id="fake-other-16"), reembed=True)
    with pytest.raises(KeyboardInterrupt):
        embed_store(toy_kg, KilledAfter(1, fake_embedder.model_id), reembed=True)
    with pytest.raises(SchemaMismatchError, match="did not finish"):
        check_query_embedder(toy_kg, meta)  # the flag says unfinished: counted, refused
    embed_store(toy_kg, fake_embedder)
    calls: list[str] = []
    run = toy_kg.run

    def spy(query, params=None):  # type: ignore[no-untyped-def]
        calls.append(query.name)
        return run(query, params)

    toy_kg.run = spy  # type: ignore[method-assign]
    check_query_embedder(toy_kg, meta)
    assert "embed_count_pending_entities" not in calls  # ask does not scan the entity label
