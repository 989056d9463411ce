"""Every kernel in cypher/ runs on the embedded store with realistic parameters.

Together with the Neo4j lint (tools/cypher_lint, run by test_lint.py and CI) this is how the
Neo4j dialect is verified without a Neo4j server: the same file text runs here and lints there.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from kgqa.errors import QueryError
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.protocol import Statement
from tests.mapped_graph import MAPPING

VEC16 = [0.25] * 16

# name -> (params, is_write). Every kernel must appear here: a new file without a case fails.
CASES: dict[str, tuple[dict[str, Any], bool]] = {
    "schema_constraint_entity_id": ({}, True),
    "schema_constraint_relation_type_name": ({}, True),
    "schema_constraint_kgqa_question_id": ({}, True),
    "index_create_entity_id": ({}, True),
    "index_create_entity_name_norm": ({}, True),
    "index_create_fulltext_entity": ({}, True),
    "index_create_vector_entity": ({"dimensions": 16, "similarity": "cosine"}, True),
    "index_create_vector_relation_type": ({"dimensions": 16, "similarity": "cosine"}, True),
    "index_drop_vector_entity": ({}, True),
    "index_drop_vector_relation_type": ({}, True),
    "index_list": ({}, False),
    "meta_get": ({}, False),
    "meta_set": (
        {"model_id": "fake-hash-16", "dimension": 16, "similarity": "cosine", "schema_version": 1},
        True,
    ),
    "meta_set_embedding_complete": ({"complete": True}, True),
    "meta_set_mapping": ({"mapping": MAPPING.to_json()}, True),
    "meta_delete": ({}, True),
    "embed_foreign_vectors": ({"limit": 3}, False),
    "unprepare_entities": ({"limit": 10}, True),
    "unprepare_nodes": ({"limit": 10}, True),
    "index_drop_entity_id": ({}, True),
    "index_drop_entity_name_norm": ({}, True),
    "index_drop_fulltext_entity": ({}, True),
    "index_drop_fulltext_entity_text": ({}, True),
    "schema_drop_constraint_relation_type_name": ({}, True),
    "schema_drop_constraint_kgqa_question_id": ({}, True),
    "ingest_entities": (
        {"rows": [{"id": "Q1", "name": "Quux", "name_norm": "quux", "text": "a test"}]},
        True,
    ),
    "ingest_degrees_backfill": ({}, True),
    "ingest_entity_labels": ({"label": "Movie", "ids": ["Jaws"]}, True),
    "ingest_triples": (
        {
            "rel_type": "WRITTEN_BY",
            "rows": [{"h": "Jaws", "h_norm": "jaws", "t": "Peter Benchley", "t_norm": "peter benchley"}],
        },
        True,
    ),
    "ingest_triples_absent": (
        {
            "rel_type": "WRITTEN_BY",
            "rows": [{"h": "Jaws", "h_norm": "jaws", "t": "Carl Gottlieb", "t_norm": "carl gottlieb"}],
        },
        True,
    ),
    "ingest_heavy_heads": ({"ids": ["Tom Hanks", "nobody"], "min_out_degree": 1}, False),
    "ingest_out_pairs": ({"ids": ["Cast Away"]}, False),
    "ingest_relation_types": (
        {"rows": [{"name": "WRITTEN_BY", "source_name": "written_by", "text": "written by"}]},
        True,
    ),
    "ingest_slices_pending": ({"max_per_node": 1}, False),
    "ingest_slices_build": ({"ids": ["Tom Hanks"], "max_per_node": 1}, True),
    "ingest_progress_get": ({"source_key": "toy"}, False),
    "ingest_progress_set": ({"source_key": "k", "source": "s", "lines_done": 3, "complete": False}, True),
    "embed_count_pending_entities": ({"model_id": "fake-hash-16"}, False),
    "embed_pending_entities": ({"model_id": "fake-hash-16", "limit": 10}, False),
    "embed_set_entities": ({"model_id": "fake-hash-16", "rows": [{"id": "Jaws", "embedding": VEC16}]}, True),
    "embed_set_entities_vector": (
        {"model_id": "fake-hash-16", "rows": [{"id": "Jaws", "embedding": VEC16}]},
        True,
    ),
    "prepare_pending_names": ({"after": "", "limit": 10}, False),
    "prepare_unkeyed_sample": ({"limit": 3}, False),
    "prepare_estimate": ({}, False),
    "prepare_set_names": ({"rows": [{"id": "Jaws", "name_norm": "jaws"}]}, True),
    "embed_pending_relation_types": ({"model_id": "fake-hash-16", "limit": 10}, False),
    "embed_set_relation_types": (
        {"model_id": "fake-hash-16", "rows": [{"name": "DIRECTED_BY", "embedding": VEC16}]},
        True,
    ),
    "stats_labels": ({}, False),
    "stats_relationship_types": ({}, False),
    "stats_relationship_type_count": ({"rel_type": "DIRECTED_BY"}, False),
    "subgraph_hop": (
        {"frontier_ids": ["Tom Hanks"], "max_degree": 100, "max_per_node": 1000, "max_triples": 100},
        False,
    ),
    "typed_expand": (
        {"source_ids": ["Jaws"], "rel_type": "DIRECTED_BY", "label": "Person", "limit": 10},
        False,
    ),
    "typed_expand_in": (
        {"source_ids": ["Tom Hanks"], "rel_type": "STARRED_ACTORS", "label": "Movie", "limit": 10},
        False,
    ),
    "index_create_fulltext_entity_text": ({}, True),
    "mor_schema": ({}, False),
    "entities_text_present": ({}, False),
    "mor_nodes_get": ({"ids": ["Jaws", "nobody"]}, False),
    "mor_text_vector": ({"embedding": VEC16, "k": 10, "label": "Movie"}, False),
    "mor_text_fulltext": ({"query": "shark", "limit": 5, "label": "Movie"}, False),
    "link_exact": ({"names_norm": ["tom hanks"], "limit": 5}, False),
    "link_fulltext": ({"query": "hanks", "limit": 5}, False),
    "link_prefix": ({"prefix": "tom", "limit": 5}, False),
    "link_relation_names": ({"limit": 100}, False),
    "link_tied": (
        {"topic": "Tom Hanks", "ids": ["Robert Zemeckis", "Cast Away", "nobody"], "max_degree": 100},
        False,
    ),
    "link_vector": ({"embedding": VEC16, "k": 3}, False),
    "entities_get": ({"ids": ["Tom Hanks", "nobody"]}, False),
    "entities_names": ({"ids": ["Tom Hanks", "nobody"]}, False),
    "entities_similarity": ({"ids": ["Tom Hanks", "nobody"], "embedding": VEC16}, False),
    "entities_walk_pool": ({"max_degree": 200, "limit": 10}, False),
    "entities_neighbours": ({"ids": ["Cast Away", "Tom Hanks", "nobody"], "max_degree": 1000}, False),
    "entities_head_types": (
        {"ids": ["Cast Away", "Tom Hanks", "nobody"], "types": ["DIRECTED_BY"], "max_degree": 1000},
        False,
    ),
    "relation_types_list": ({}, False),
    "question_save": (
        {
            "id": "q1",
            "text": "who directed Jaws?",
            "asked_at": "2026-11-22T10:00:00Z",
            "answers": ["Steven Spielberg"],
            "topic_ids": ["Jaws"],
            "answer_ids": ["Steven Spielberg"],
            "evidence_heads": ["Jaws"],
            "evidence_types": ["DIRECTED_BY"],
            "evidence_tails": ["Steven Spielberg"],
        },
        True,
    ),
    "question_link_topics": ({"id": "q1", "entity_ids": ["Jaws"]}, True),
    "question_link_answers": ({"id": "q1", "entity_ids": ["Steven Spielberg"]}, True),
    "question_get": ({"id": "q1"}, False),
    "question_evidence": ({"id": "q1"}, False),
    "question_browser": ({"id": "q1"}, False),
}


#: Kernels only the Neo4j adapter sends (kglite lacks the procedure); linted, run by the live suite.
NEO4J_ONLY = {"embed_set_entities_vector"}
#: Kernels run only on a mapped graph (kgqa unprepare): on kgqa's own model the entity id is a
#: constraint, not an index; tests/unit/ingest/test_unprepare.py runs them there.
MAPPED_ONLY = {"index_drop_entity_id"}


def test_every_kernel_has_a_case() -> None:
    assert sorted(CASES) == queries.names()


@pytest.mark.parametrize("name", queries.names())
def test_kernel_runs_on_embedded_store(toy_kg: KgliteStore, name: str) -> None:
    if name in NEO4J_ONLY:
        pytest.skip(f"{name} calls a Neo4j-only procedure (tests/integration/test_neo4j_live.py runs it)")
    if name in MAPPED_ONLY:
        pytest.skip(f"{name} runs on a mapped graph only (tests/unit/ingest/test_unprepare.py runs it)")
    params, is_write = CASES[name]
    query = queries.get(name)
    if name.startswith("question_") and name != "question_save":
        toy_kg.write([Statement(queries.get("question_save"), CASES["question_save"][0])])
    if name in ("index_create_fulltext_entity_text", "mor_text_fulltext"):  # a text index needs texts
        toy_kg.write([Statement(queries.get("ingest_entities"), CASES["ingest_entities"][0])])
        toy_kg.write([Statement(queries.get("index_create_fulltext_entity_text"), {})])
    if is_write:
        summaries = toy_kg.write([Statement(query, params)])
        assert len(summaries) == 1
        assert query.returns == ()
        return
    rows = toy_kg.run(query, params)
    for row in rows:
        assert tuple(row) == query.returns, f"{query.path} returned columns {tuple(row)}"


def test_subgraph_hop_returns_both_directions_as_parallel_arrays(toy_kg: KgliteStore) -> None:
    rows = toy_kg.run(
        queries.get("subgraph_hop"),
        {"frontier_ids": ["Cast Away"], "max_degree": 100, "max_per_node": 1000, "max_triples": 100},
    )
    row = rows[0]
    triples = set(zip(row["h_ids"], row["r_types"], row["t_ids"], strict=True))
    assert triples == {
        ("Cast Away", "DIRECTED_BY", "Robert Zemeckis"),
        ("Cast Away", "STARRED_ACTORS", "Tom Hanks"),
        ("Cast Away", "RELEASE_YEAR", "2000"),
    }
    assert len(set(row["r_eids"])) == 3


def test_subgraph_hop_skips_frontier_entities_above_max_degree(toy_kg: KgliteStore) -> None:
    params = {
        "frontier_ids": ["Tom Hanks", "Jaws"],
        "max_degree": 2,
        "max_per_node": 1000,
        "max_triples": 100,
    }
    row = toy_kg.run(queries.get("subgraph_hop"), params)[0]
    # Tom Hanks has 3 relationships (> 2): not expanded; Jaws has 2.
    assert set(row["h_ids"]) == {"Jaws"}


def test_subgraph_hop_caps_triples(toy_kg: KgliteStore) -> None:
    params = {"frontier_ids": ["Tom Hanks"], "max_degree": 100, "max_per_node": 1000, "max_triples": 2}
    assert len(toy_kg.run(queries.get("subgraph_hop"), params)[0]["r_eids"]) == 2


def test_typed_expand_follows_one_direction_one_type_and_one_label(toy_kg: KgliteStore) -> None:
    toy_kg.write(
        [Statement(queries.get("ingest_entity_labels"), {"label": "Movie", "ids": ["Jaws", "Cast Away"]})]
    )
    params = {
        "source_ids": ["Steven Spielberg", "Robert Zemeckis"],
        "rel_type": "DIRECTED_BY",
        "label": "Movie",
        "limit": 50,
    }
    rows = toy_kg.run(queries.get("typed_expand_in"), params)
    assert sorted(r["target_id"] for r in rows) == ["Cast Away", "Jaws"]  # not The Terminal: no label
    assert toy_kg.run(queries.get("typed_expand"), params) == []  # directors point nowhere
    assert len(toy_kg.run(queries.get("typed_expand_in"), {**params, "limit": 1})) == 1


def test_link_vector_scores_use_neo4j_scale(toy_kg: KgliteStore, fake_embedder: Any) -> None:
    vector = fake_embedder.embed(["Tom Hanks"])[0].tolist()
    rows = toy_kg.run(queries.get("link_vector"), {"embedding": vector, "k": 14})
    assert rows[0]["id"] == "Tom Hanks"
    assert rows[0]["score"] == pytest.approx(1.0, abs=1e-5)  # cos 1 -> (1 + 1) / 2
    assert all(0.0 <= r["score"] <= 1.0 for r in rows)
    scores = [r["score"] for r in rows]
    assert scores == sorted(scores, reverse=True)


def test_entities_similarity_scores_in_the_store_as_neo4j_does(
    toy_kg: KgliteStore, fake_embedder: Any
) -> None:
    """Neo4j's vector.similarity.cosine, which kglite lacks: (1 + cos) / 2 of each entity's stored
    embedding, the same numbers as scoring the fetched vectors in Python."""
    ids = ["Tom Hanks", "Jaws", "Cast Away", "nobody"]
    query = fake_embedder.embed(["Tom Hanks"])[0]
    rows = toy_kg.run(queries.get("entities_similarity"), {"ids": ids, "embedding": query.tolist()})
    assert [r["id"] for r in rows] == ids[:3]  # a missing id is absent
    stored = {
        r["id"]: torch.tensor(r["embedding"]) for r in toy_kg.run(queries.get("entities_get"), {"ids": ids})
    }
    for row in rows:
        cos = torch.nn.functional.cosine_similarity(stored[row["id"]], query, dim=0)
        assert row["score"] == pytest.approx((1 + cos.item()) / 2, abs=1e-5)
    assert rows[0]["score"] == pytest.approx(1.0, abs=1e-5) and rows[1]["score"] < 0.99


def test_entities_similarity_is_null_without_an_embedding_and_refuses_another_dimension(
    toy_kg: KgliteStore,
) -> None:
    toy_kg.write(
        [
            Statement(
                queries.get("ingest_entities"),
                {"rows": [{"id": "bare", "name": "Bare", "name_norm": "bare", "text": None}]},
            )
        ]
    )
    rows = toy_kg.run(queries.get("entities_similarity"), {"ids": ["bare"], "embedding": [1.0] * 16})
    assert rows == [{"id": "bare", "score": None}]
    with pytest.raises(QueryError, match="3 dims|16 dims"):
        toy_kg.run(queries.get("entities_similarity"), {"ids": ["Jaws"], "embedding": [1.0, 0.0, 0.0]})


def test_question_evidence_returns_saved_relationships_in_saved_order(toy_kg: KgliteStore) -> None:
    hop = toy_kg.run(
        queries.get("subgraph_hop"),
        {"frontier_ids": ["Jaws"], "max_degree": 9, "max_per_node": 1000, "max_triples": 9},
    )[0]
    keys = sorted(zip(hop["h_ids"], hop["r_types"], hop["t_ids"], strict=True), reverse=True)
    keys.append(("Jaws", "DIRECTED_BY", "Tom Hanks"))  # no such relationship: absent, not an error
    params = dict(
        CASES["question_save"][0],
        evidence_heads=[h for h, _, _ in keys],
        evidence_types=[r for _, r, _ in keys],
        evidence_tails=[t for _, _, t in keys],
    )
    toy_kg.write([Statement(queries.get("question_save"), params)])
    rows = toy_kg.run(queries.get("question_evidence"), {"id": "q1"})
    assert [(r["h_id"], r["rel_type"], r["t_id"]) for r in rows] == [
        ("Jaws", "HAS_GENRE", "Thriller"),
        ("Jaws", "DIRECTED_BY", "Steven Spielberg"),
    ]
    assert [r["rank"] for r in rows] == [0, 1]


def test_saved_question_links_never_enter_subgraphs(toy_kg: KgliteStore) -> None:
    toy_kg.write([Statement(queries.get("question_save"), CASES["question_save"][0])])
    toy_kg.write(
        [Statement(queries.get("question_link_topics"), {"id": "q1", "entity_ids": ["Jaws", "Tom Hanks"]})]
    )
    row = toy_kg.run(
        queries.get("subgraph_hop"),
        {"frontier_ids": ["Jaws"], "max_degree": 2, "max_per_node": 1000, "max_triples": 9},
    )[0]
    assert set(row["r_types"]) == {"DIRECTED_BY", "HAS_GENRE"}  # KGQA_TOPIC neither returned nor counted


def test_link_exact_caps_rows_per_name_not_across_names(kglite_store: KgliteStore) -> None:
    rows = [{"id": f"y{i:02d}", "name": "2000", "name_norm": "2000", "text": None} for i in range(20, 0, -1)]
    rows.append({"id": "cast", "name": "Cast Away", "name_norm": "cast away", "text": None})
    kglite_store.write([Statement(queries.get("ingest_entities"), {"rows": rows})])
    got = kglite_store.run(queries.get("link_exact"), {"names_norm": ["2000", "cast away"], "limit": 3})
    assert sorted(r["id"] for r in got) == [
        "cast",
        "y01",
        "y02",
        "y03",
    ]  # first 3 ids + the other name
