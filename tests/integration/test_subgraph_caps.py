"""Hub-safe, deterministic subgraph extraction on the embedded store (issue 15).

The kernel's caps keep a fixed slice of a hub, whatever order the store keeps relationships in:
the same question gives the same subgraph on a store loaded in another order, and (the same check
in test_neo4j_live) on Neo4j.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_graphs import first_by_kernel_order, hub_records, hub_triples

from ingest.loader import load
from kgqa.retrieval.graph import subgraph
from kgqa.retrieval.graph.subgraph import Subgraph, extract_subgraph
from kgqa.store.kglite_store import KgliteStore

CAPS = {"hops": 3, "max_degree": 20, "max_per_node": 15, "max_triples": 40}


def _extract(path: Path, seed: int | None) -> Subgraph:
    with KgliteStore(path) as store:
        load(store, hub_records(seed=seed), source="hub", fmt="test", source_key="hub")
        return extract_subgraph(store, ["H"], **CAPS)


def _triples(sub: Subgraph) -> list[tuple[str, str, str]]:
    return [sub.triple(i) for i in range(sub.num_triples)]


def test_hub_subgraph_does_not_depend_on_storage_order(tmp_path: Path) -> None:
    in_order = _extract(tmp_path / "a.kgl", seed=None)
    shuffled = _extract(tmp_path / "b.kgl", seed=7)
    assert _triples(in_order) == _triples(shuffled)
    assert in_order.entity_ids == shuffled.entity_ids


def test_hub_topic_keeps_its_first_triples_and_leaves_budget_for_the_next_hop(tmp_path: Path) -> None:
    sub = _extract(tmp_path / "g.kgl", seed=3)
    triples = _triples(sub)
    expected_first_hop = first_by_kernel_order(hub_triples(), "H", CAPS["max_per_node"])
    assert triples[: CAPS["max_per_node"]] == expected_first_hop
    assert sum("H" in (h, t) for h, _, t in triples) == CAPS["max_per_node"]  # 60 relationships, 15 kept
    # The frontier after the hub (n00..n14) is expanded within the global cap: NEXT triples come in.
    assert ("n00", "NEXT", "m00") in triples and ("n00", "IN", "G") in triples
    assert len(triples) <= CAPS["max_triples"]


def test_hub_reached_later_is_an_endpoint_not_expanded(tmp_path: Path) -> None:
    sub = _extract(tmp_path / "h.kgl", seed=5)
    assert "G" in sub.entity_ids  # reached at hop 2, 31 relationships > max_degree 20
    assert not any(r == "HAS" for _, r, _ in _triples(sub))


def test_degree_backfill_gives_an_older_store_its_counts(tmp_path: Path) -> None:
    path = tmp_path / "old.kgl"
    with KgliteStore(path) as store:
        load(store, hub_records(), source="hub", fmt="test", source_key="hub")
        store.graph.cypher("MATCH (e:Entity) REMOVE e.kgqa_degree")  # as loaded before the property
        load(store, hub_records("x"), source="more", fmt="test", source_key="more")
        result: Any = store.graph.cypher(
            "MATCH (e:Entity) WHERE e.id IN ['H', 'G', 'xH'] RETURN e.id AS id, e.kgqa_degree AS d"
        )
    assert {r["id"]: r["d"] for r in result.to_list()} == {"H": 60, "G": 31, "xH": 60}


@pytest.mark.parametrize("chunk", [1, 4])
def test_a_frontier_read_in_chunks_gives_the_subgraph_of_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    caps = {**CAPS, "max_triples": 25}  # the budget runs out inside the second hop's frontier
    whole = _extract(tmp_path / "whole.kgl", seed=2)  # 40 triples allowed, 31 reachable
    with KgliteStore(tmp_path / "chunked.kgl") as store:
        load(store, hub_records(seed=2), source="hub", fmt="test", source_key="hub")
        reference = extract_subgraph(store, ["H"], **caps)
        monkeypatch.setattr(subgraph, "FRONTIER_CHUNK", chunk)
        chunked = extract_subgraph(store, ["H"], **caps)
    assert _triples(chunked) == _triples(reference) and chunked.entity_ids == reference.entity_ids
    assert reference.num_triples < whole.num_triples  # cut by the budget (its rows count repeats)
