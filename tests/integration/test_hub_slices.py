"""Hub slices (ingest.slices): a hub expanded through its slice gives the rows of the full order.

On hub_graphs.mixed_hub_triples (tail hubs, head hubs, hub-to-hub links both ways, self-loops);
every expectation is computed from the triples, not read back from a store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_graphs import as_records, first_by_kernel_order, mixed_hub_triples

from ingest.loader import load
from ingest.prepare import prepare_store
from kgqa.names import relationship_type
from kgqa.retrieval.graph.subgraph import extract_subgraph
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.mapping import GraphMapping

SLICE_CAP = 12
NO_SLICES = 10**9  # a cap no entity exceeds: the load builds no slice
SLICE_LISTS = (
    "kgqa_slice_heads",
    "kgqa_slice_tails",
    "kgqa_slice_heads_via_self",
    "kgqa_slice_tails_via_self",
)


def _hop(store: KgliteStore, entity: str, cap: int) -> list[tuple[str, str, str]]:
    params = {"frontier_ids": [entity], "max_degree": None, "max_per_node": cap, "max_triples": 10_000}
    row = store.run(queries.get("subgraph_hop"), params)[0]
    return list(zip(row["h_ids"], row["r_types"], row["t_ids"], strict=True))


def _raw(store: KgliteStore, text: str, **params: Any) -> list[dict[str, Any]]:
    result: Any = store.graph.cypher(text, params=params)
    return result.to_list()


def _degrees(triples: list[tuple[str, str, str]]) -> dict[str, int]:
    degree: dict[str, int] = {}
    for h, _, t in triples:
        for e in {h, t}:
            degree[e] = degree.get(e, 0) + 1
    return degree


def _stored_degrees(store: KgliteStore) -> dict[str, int]:
    """Each entity's stored ``kgqa_degree``, after asserting that it and ``kgqa_out_degree``
    equal the live counts."""
    rows = _raw(
        store,
        "MATCH (e:Entity) RETURN e.id AS id, e.kgqa_degree AS d, e.kgqa_out_degree AS o, "
        "COUNT { (e)--() } AS live_d, COUNT { (e)-->() } AS live_o",
    )
    assert all(r["d"] == r["live_d"] and r["o"] == r["live_o"] for r in rows)
    return {r["id"]: r["d"] for r in rows}


@pytest.fixture(scope="module")
def sliced(tmp_path_factory: pytest.TempPathFactory) -> tuple[KgliteStore, list[tuple[str, str, str]]]:
    triples = mixed_hub_triples(seed=1)
    store = KgliteStore(tmp_path_factory.mktemp("slices") / "g.kgl")
    report = load(
        store, as_records(triples), source="hubs", fmt="test", source_key="hubs", slice_cap=SLICE_CAP
    )
    assert report.slices_built == sum(d > SLICE_CAP for d in _degrees(triples).values())
    return store, triples


def test_every_entity_over_the_cap_gets_a_slice_for_the_cap(sliced: Any) -> None:
    store, triples = sliced
    rows = _raw(
        store,
        "MATCH (e:Entity) WHERE e.kgqa_slice_cap IS NOT NULL RETURN e.id AS id, e.kgqa_slice_cap AS cap",
    )
    assert {r["id"] for r in rows} == {e for e, d in _degrees(triples).items() if d > SLICE_CAP}
    assert {r["cap"] for r in rows} == {SLICE_CAP}


def test_each_slice_list_is_used_somewhere(sliced: Any) -> None:
    store, _ = sliced
    used = _raw(
        store,
        "MATCH (e:Entity) WHERE e.kgqa_slice_cap IS NOT NULL RETURN "
        + ", ".join(f"sum(size(e.{name})) AS {name}" for name in SLICE_LISTS),
    )[0]
    assert all(used[name] > 0 for name in SLICE_LISTS), used  # the graph exercises every branch


@pytest.mark.parametrize("cap", [1, 5, SLICE_CAP, SLICE_CAP + 7])
def test_sliced_hubs_give_the_rows_of_the_full_order(sliced: Any, cap: int) -> None:
    store, triples = sliced
    for hub in ("T0", "T1", "T2", "S0", "S1"):
        assert _hop(store, hub, cap) == first_by_kernel_order(triples, hub, cap), hub


def test_the_kernel_reads_the_slice(tmp_path: Path) -> None:
    """Drop one far id from a hub's slice (and its relationships from the slice's count): the hop
    loses that far end's triples (so the slice, not the full order, served it), and comes back
    whole once the slice is rebuilt."""
    triples = mixed_hub_triples(seed=1)
    store = KgliteStore(tmp_path / "g.kgl")
    load(store, as_records(triples), source="hubs", fmt="test", source_key="hubs", slice_cap=SLICE_CAP)
    expected = first_by_kernel_order(triples, "T0", SLICE_CAP)
    slice_ = _raw(
        store, "MATCH (e:Entity {id: 'T0'}) RETURN e.kgqa_slice_heads AS heads, e.kgqa_slice_tails AS tails"
    )
    dropped = next(far for far in slice_[0]["heads"] if far not in slice_[0]["tails"])
    store.graph.cypher(
        "MATCH (e:Entity {id: 'T0'}), (far:Entity {id: $far}) "
        "SET e.kgqa_slice_heads = [x IN e.kgqa_slice_heads WHERE x <> $far], "
        "e.kgqa_slice_rows = e.kgqa_slice_rows - COUNT { (far)-->(e) }",
        params={"far": dropped},
    )
    assert not any(dropped in (h, t) for h, _, t in _hop(store, "T0", SLICE_CAP))
    store.graph.cypher("MATCH (e:Entity {id: 'T0'}) REMOVE e.kgqa_slice_cap")
    load(
        store,
        as_records(triples),
        source="hubs",
        fmt="test",
        source_key="hubs",
        force=True,
        slice_cap=SLICE_CAP,
    )
    assert _hop(store, "T0", SLICE_CAP) == expected


def test_each_slice_counts_the_relationships_its_walk_finds(sliced: Any) -> None:
    """``kgqa_slice_rows`` is what subgraph_hop's slice walk finds (far ids in ``heads`` send
    relationships into the hub, in ``tails`` receive them), counted here from the triples: a current
    slice passes its content check and is used."""
    store, triples = sliced
    rows = _raw(
        store,
        "MATCH (e:Entity) WHERE e.kgqa_slice_cap IS NOT NULL RETURN e.id AS id, e.kgqa_slice_rows AS rows, "
        "e.kgqa_slice_heads + e.kgqa_slice_heads_via_self AS heads, "
        "e.kgqa_slice_tails + e.kgqa_slice_tails_via_self AS tails",
    )
    assert rows
    for row in rows:
        hub, heads, tails = row["id"], set(row["heads"]), set(row["tails"])
        walked = sum(t == hub and h in heads for h, _, t in triples)
        walked += sum(h == hub and t in tails for h, _, t in triples)
        assert row["rows"] == walked, hub


def test_a_fact_swapped_on_a_live_graph_is_caught_by_content_not_degree(tmp_path: Path) -> None:
    """Issue 29 minor: on a live graph a user deletes a fact of a hub's slice and adds another, so
    the degree is what the slice was built at; the hop still gives the rows of the new graph's full
    order (the slice's count no longer matches its walk), the hub is listed as stale, and a refresh
    rebuilds its slice."""
    from ingest.slices import refresh_slices

    triples = mixed_hub_triples(seed=1)
    store = KgliteStore(tmp_path / "g.kgl")
    load(store, as_records(triples), source="hubs", fmt="test", source_key="hubs", slice_cap=SLICE_CAP)
    pending = queries.get("ingest_slices_pending")
    assert store.run(pending, {"max_per_node": SLICE_CAP}) == []
    gone = first_by_kernel_order(triples, "T0", SLICE_CAP)[0]
    _raw(
        store,
        "MATCH (h:Entity {id: $h})-[r]->(t:Entity {id: $t}) WHERE type(r) = $r DELETE r",
        h=gone[0],
        r=gone[1],
        t=gone[2],
    )
    _raw(store, "MATCH (t:Entity {id: 'T0'}) CREATE (:Entity {id: '0-new', name: 'new'})-[:NEW_FACT]->(t)")
    [degree] = _raw(
        store, "MATCH (e:Entity {id: 'T0'}) RETURN e.kgqa_slice_degree = COUNT { (e)--() } AS same"
    )
    assert degree["same"]  # the degree cannot tell
    now = [t for t in triples if (t[0], relationship_type(t[1]), t[2]) != gone] + [
        ("0-new", "new_fact", "T0")
    ]
    expected = first_by_kernel_order(now, "T0", SLICE_CAP)
    assert expected[0] == ("0-new", "NEW_FACT", "T0")
    assert _hop(store, "T0", SLICE_CAP) == expected
    stale = [r["id"] for r in store.run(pending, {"max_per_node": SLICE_CAP})]
    assert "T0" in stale and set(stale) <= {gone[0], gone[2]}  # the deleted fact's other end may be a hub too
    assert refresh_slices(store, SLICE_CAP) == len(stale)
    assert store.run(pending, {"max_per_node": SLICE_CAP}) == []
    assert _hop(store, "T0", SLICE_CAP) == expected


def test_two_hop_subgraphs_match_a_store_without_slices(sliced: Any, tmp_path: Path) -> None:
    store, triples = sliced
    plain = KgliteStore(tmp_path / "plain.kgl")
    load(
        plain, as_records(triples, seed=9), source="hubs", fmt="test", source_key="hubs", slice_cap=NO_SLICES
    )
    assert not _raw(plain, "MATCH (e:Entity) WHERE e.kgqa_slice_cap IS NOT NULL RETURN e.id AS id")
    caps = {"hops": 2, "max_degree": 30, "max_per_node": SLICE_CAP, "max_triples": 60}
    for topics in (["T0"], ["S0"], ["S1", "T2"], ["x1"]):
        a, b = extract_subgraph(store, topics, **caps), extract_subgraph(plain, topics, **caps)
        assert [a.triple(i) for i in range(a.num_triples)] == [b.triple(i) for i in range(b.num_triples)]
        assert a.entity_ids == b.entity_ids


def test_a_load_that_adds_to_a_hub_rebuilds_its_slice_and_a_rerun_changes_nothing(tmp_path: Path) -> None:
    triples = mixed_hub_triples(seed=2)
    more = [(f"w{i}", "p", "S1") for i in range(5)] + [("S1", "a", "T0")]
    store = KgliteStore(tmp_path / "g.kgl")
    load(store, as_records(triples), source="a", fmt="test", source_key="a", slice_cap=SLICE_CAP)
    before = {
        r["id"]: r["d"] for r in _raw(store, "MATCH (e:Entity) RETURN e.id AS id, e.kgqa_slice_degree AS d")
    }
    report = load(store, as_records(more), source="b", fmt="test", source_key="b", slice_cap=SLICE_CAP)
    assert report.slices_built == 2  # S1 and T0 gained relationships; nothing else changed
    after = {
        r["id"]: r["d"] for r in _raw(store, "MATCH (e:Entity) RETURN e.id AS id, e.kgqa_slice_degree AS d")
    }
    assert {e for e in after if after[e] != before.get(e)} == {"S1", "T0"}
    for hub in ("S1", "T0"):
        assert _hop(store, hub, SLICE_CAP) == first_by_kernel_order(triples + more, hub, SLICE_CAP)
    again = load(
        store, as_records(more), source="b", fmt="test", source_key="b", force=True, slice_cap=SLICE_CAP
    )
    assert again.slices_built == 0 and again.writes.total == 0


def test_stored_degrees_match_the_graph_after_loads_from_either_end(tmp_path: Path) -> None:
    """The loader probes for an existing triple from the lighter end; either way a re-run
    creates nothing and the stored degrees stay exact."""
    triples = mixed_hub_triples(seed=3)
    store = KgliteStore(tmp_path / "g.kgl")
    load(store, as_records(triples), source="a", fmt="test", source_key="a")
    again = load(store, as_records(triples, seed=4), source="a", fmt="test", source_key="a", force=True)
    assert again.writes.total == 0
    assert _stored_degrees(store) == _degrees(triples)
    assert _raw(store, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] == len(triples)


def test_prepare_slices_the_hubs_of_a_mapped_graph(tmp_path: Path) -> None:
    """On a graph kgqa did not ingest (no stored degrees), slices count fact types only."""
    mapping = GraphMapping.of(
        entity_label="Node", id_property="uid", name_property="title", fact_types=("P", "Q")
    )
    store = KgliteStore(tmp_path / "user.kgl", mapping=mapping)
    triples = [(f"n{i}", "P", "hub") for i in range(8)] + [("hub", "Q", f"m{i}") for i in range(5)]
    nodes = sorted({e for h, _, t in triples for e in (h, t)})
    store.graph.cypher("UNWIND $ids AS i CREATE (:Node {uid: i, title: i})", params={"ids": nodes})
    for h, r, t in triples:
        store.graph.cypher(
            f"MATCH (a:Node {{uid: $h}}), (b:Node {{uid: $t}}) CREATE (a)-[:{r}]->(b)",
            params={"h": h, "t": t},
        )
    for i in range(20):  # not facts: must neither make `n0` a hub nor enter a slice
        store.graph.cypher(
            "MATCH (a:Node {uid: 'n0'}) CREATE (a)-[:LIKES]->(:Other {i: $i})", params={"i": i}
        )
    report = prepare_store(store, slice_cap=6)
    assert report.slices_built == 1
    expected = sorted(
        [(h, r, t) for h, r, t in triples], key=lambda x: (x[2] if x[0] == "hub" else x[0], x[1], x[0])
    )
    for cap in (3, 6, 9):
        assert _hop(store, "hub", cap) == expected[:cap]
    assert prepare_store(store, slice_cap=6).slices_built == 0


def test_rows_out_of_heavy_heads_skip_the_probe_and_stay_exact(tmp_path: Path) -> None:
    """Heads over ``heavy_out_degree`` are read once and their rows checked in Python
    (ingest.heavy_heads): the graph, the stored degrees and idempotence are those of the probe."""
    triples = mixed_hub_triples(seed=5)
    store = KgliteStore(tmp_path / "g.kgl")
    sent: list[str] = []
    write = store.write

    def spy(statements: Any) -> Any:
        sent.extend(s.query.name for s in statements)
        return write(statements)

    store.write = spy  # type: ignore[method-assign]
    first = load(
        store, as_records(triples), source="a", fmt="test", source_key="a", batch_size=20, heavy_out_degree=5
    )
    assert "ingest_triples_absent" in sent  # S0 and S1 turn heavy after their first batches
    assert first.writes.relationships_created == len(triples)
    more = [("S0", "p", f"z{i}") for i in range(4)] + [t for t in triples if t[0] == "S0"][:6]
    second = load(
        store, as_records(more), source="b", fmt="test", source_key="b", batch_size=3, heavy_out_degree=5
    )
    assert second.writes.relationships_created == 4  # the six known S0 triples already exist
    again = load(
        store,
        as_records(triples, seed=7),
        source="a",
        fmt="test",
        source_key="a",
        force=True,
        heavy_out_degree=5,
    )
    assert again.writes.total == 0
    _stored_degrees(store)
    stored = _raw(store, "MATCH (h)-[r]->(t) RETURN h.id AS h, type(r) AS r, t.id AS t")
    expected = {(h, relationship_type(r), t) for h, r, t in triples + more}
    assert sorted((x["h"], x["r"], x["t"]) for x in stored) == sorted(expected)
