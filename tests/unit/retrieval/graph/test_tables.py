"""The entity table: rows fetched question by question stay where they were put."""

from __future__ import annotations

import torch

from kgqa.retrieval.graph.tables import EntityTable
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore


def test_rows_fetched_over_many_calls_keep_their_vectors(toy_kg: KgliteStore) -> None:
    ids = [r["id"] for r in toy_kg.graph.cypher("MATCH (e:Entity) RETURN e.id AS id ORDER BY id").to_list()]
    stored = {r["id"]: r["embedding"] for r in toy_kg.run(queries.get("entities_get"), {"ids": ids})}
    table = EntityTable(toy_kg, len(stored[ids[0]]))
    table._vectors, table._text = table._vectors[:2], table._text[:2]  # so the storage grows on the way
    for i, entity_id in enumerate(ids):  # one new entity per call, as each question adds a few
        table.rows([entity_id, *ids[:i]])
    rows = table.rows([*ids, "no such entity"])
    assert rows[-1] == 0 and torch.equal(table.matrix[0], torch.zeros(table.dimension))
    assert sorted(rows[:-1].tolist()) == list(range(1, len(ids) + 1)) and len(table.matrix) == len(ids) + 1
    expected = torch.tensor([stored[e] for e in ids], dtype=torch.float32)
    assert torch.equal(table.matrix[rows[:-1]], expected)
    assert table.has_text.shape == (len(ids) + 1,) and bool(table.has_text[rows[:-1]].all())
    assert not bool(table.has_text[0])
