"""Every kernel in ``cypher/`` on a real Neo4j server, through ``Neo4jStore``.

No Neo4j server can run where the default suite runs, so the dialect is otherwise checked by the
language-library lint and by executing the kernels on kglite. This module is how a user with a
server verifies it for real. It is skipped unless ``KGQA_TEST_NEO4J_URI`` is set::

    export NEO4J_PASSWORD=change-me-please
    docker compose up -d neo4j            # wait until `docker compose ps` says healthy
    KGQA_TEST_NEO4J_URI=bolt://localhost:7687 pytest -m neo4j tests/integration/test_neo4j_live.py

Optional: ``KGQA_TEST_NEO4J_USER`` (default ``neo4j``), ``KGQA_TEST_NEO4J_DATABASE`` (default
``neo4j``). The database must be EMPTY: the module refuses (skips) otherwise, and at the end it
deletes every node and the indexes and constraints the kernels created.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from pydantic import SecretStr

from kgqa.config import StoreSettings
from kgqa.errors import MissingIndexError, QueryError
from kgqa.names import normalise_name
from kgqa.store import queries, schema
from kgqa.store.protocol import Statement
from kgqa.types import SCHEMA_VERSION, EmbeddingMeta

pytestmark = [
    pytest.mark.neo4j,
    pytest.mark.skipif(
        not os.environ.get("KGQA_TEST_NEO4J_URI"),
        reason="set KGQA_TEST_NEO4J_URI (and NEO4J_PASSWORD) to run against a live, empty Neo4j 5.26+",
    ),
]

F = TypeVar("F", bound=Callable[..., Any])

META = EmbeddingMeta("kgqa-live-test", 4, "cosine")
ENTITIES = {  # id -> (name, label, embedding)
    "m1": ("The Matrix", "Movie", [1.0, 0.0, 0.0, 0.0]),
    "m2": ("John Wick", "Movie", [0.9, 0.1, 0.0, 0.0]),
    "p1": ("Lana Wachowski", "Person", [0.0, 1.0, 0.0, 0.0]),
    "p2": ("Keanu Reeves", "Person", [0.0, 0.0, 1.0, 0.0]),
}
TRIPLES = {"DIRECTED_BY": [("m1", "p1")], "STARRED_ACTORS": [("m1", "p2"), ("m2", "p2")]}
RELATION_EMBEDDINGS = {"DIRECTED_BY": [0.0, 0.0, 0.0, 1.0], "STARRED_ACTORS": [0.0, 0.0, 1.0, 1.0]}
# schema kernels have no "undo" kernel; cleanup drops what they create by name
CLEANUP_DDL = (
    "DROP CONSTRAINT entity_id IF EXISTS",
    "DROP CONSTRAINT relation_type_name IF EXISTS",
    "DROP CONSTRAINT question_id IF EXISTS",
    "DROP INDEX entity_name_norm IF EXISTS",
    "DROP INDEX entity_name IF EXISTS",
    "DROP INDEX entity_text IF EXISTS",
    "DROP INDEX entity_embedding IF EXISTS",
    "DROP INDEX relation_type_embedding IF EXISTS",
)

# the write kernels the `graph` fixture runs (through kgqa.store.schema where a helper exists)
WRITTEN_BY_FIXTURE = (
    *schema.CONSTRAINT_KERNELS,
    *schema.VECTOR_INDEX_KERNELS,
    *schema.FULLTEXT_INDEX_KERNELS,
    schema.TEXT_INDEX_KERNEL,
    "entities_text_present",
    "ingest_entities",
    "ingest_triples",
    "ingest_entity_labels",
    "ingest_relation_types",
    "ingest_progress_set",
    "embed_set_entities",
    "embed_set_relation_types",
    "meta_set",
    "question_save",
    "question_link_entities",
)
COVERED: set[str] = set(WRITTEN_BY_FIXTURE)


def covers(*names: str) -> Callable[[F], F]:
    """Record which kernels a test runs, so the last test can insist that none is left out."""
    COVERED.update(names)
    return lambda fn: fn


def run(store: Any, name: str, **params: Any) -> list[dict[str, Any]]:
    return store.run(queries.get(name), params)


def write(store: Any, *statements: tuple[str, dict[str, Any]]) -> None:
    store.write([Statement(queries.get(name), params) for name, params in statements])


def await_indexes(store: Any) -> None:
    """Neo4j builds indexes in the background; queries right after CREATE may see them POPULATING."""
    store.driver.execute_query("CALL db.awaitIndexes(120)", database_=store.database)


@pytest.fixture(scope="module")
def store() -> Iterator[Any]:
    from kgqa.store.neo4j_store import Neo4jStore

    password = os.environ.get("NEO4J_PASSWORD")
    if not password:
        pytest.skip("set NEO4J_PASSWORD for the server at KGQA_TEST_NEO4J_URI")
    settings = StoreSettings(
        backend="neo4j",
        neo4j_uri=os.environ["KGQA_TEST_NEO4J_URI"],
        neo4j_user=os.environ.get("KGQA_TEST_NEO4J_USER", "neo4j"),
        neo4j_password=SecretStr(password),
        neo4j_database=os.environ.get("KGQA_TEST_NEO4J_DATABASE", "neo4j"),
        retry_attempts=3,
    )
    live = Neo4jStore.from_settings(settings)
    if run(live, "stats_labels"):
        live.close()
        pytest.skip(
            f"{settings.neo4j_uri}/{settings.neo4j_database} is not empty; this test deletes "
            "everything it finds there at the end, so point it at a throwaway database"
        )
    try:
        yield live
    finally:
        live.driver.execute_query("MATCH (n) DETACH DELETE n", database_=live.database)
        for statement in CLEANUP_DDL:
            live.driver.execute_query(statement, database_=live.database)
        live.close()


@pytest.fixture(scope="module")
def graph(store: Any) -> dict[str, Any]:
    """The tiny movie graph, written by the same kernels and helpers ``kgqa ingest``/``embed`` use."""
    schema.ensure_constraints(store)
    schema.ensure_constraints(store)  # idempotent: IF NOT EXISTS

    entity_rows = [
        {"id": i, "name": n, "name_norm": normalise_name(n), "text": f"{n} ({label})"}
        for i, (n, label, _) in ENTITIES.items()
    ]
    statements: list[tuple[str, dict[str, Any]]] = [("ingest_entities", {"rows": entity_rows})]
    for rel_type, pairs in TRIPLES.items():
        rows = [{"h": h, "h_norm": h, "t": t, "t_norm": t} for h, t in pairs]
        statements.append(("ingest_triples", {"rel_type": rel_type, "rows": rows}))
    for label in ("Movie", "Person"):
        ids = [i for i, (_, lab, _) in ENTITIES.items() if lab == label]
        statements.append(("ingest_entity_labels", {"label": label, "ids": ids}))
    statements.append(
        (
            "ingest_relation_types",
            {
                "rows": [
                    {"name": r, "source_name": r.lower(), "text": r.lower().replace("_", " ")}
                    for r in TRIPLES
                ]
            },
        )
    )
    write(store, *statements)  # one transaction, dynamic labels and types included

    pending_before = run(store, "embed_count_pending_entities", model_id=META.model_id)

    entity_vectors = [{"id": i, "embedding": e} for i, (_, _, e) in ENTITIES.items()]
    relation_vectors = [{"name": r, "embedding": e} for r, e in RELATION_EMBEDDINGS.items()]
    progress = {"source_key": "live-test", "source": "memory", "lines_done": 3, "complete": True}
    write(
        store,
        ("embed_set_entities", {"model_id": META.model_id, "rows": entity_vectors}),
        ("embed_set_relation_types", {"model_id": META.model_id, "rows": relation_vectors}),
        ("ingest_progress_set", progress),
    )
    schema.ensure_search_indexes(store, META)
    schema.record_embedding_meta(store, META)
    await_indexes(store)

    [hop] = run(store, "subgraph_hop", frontier_ids=["m1"], max_degree=100, max_triples=100)
    directed = hop["r_eids"][hop["r_types"].index("DIRECTED_BY")]
    question = {
        "id": "q1",
        "text": "who directed [The Matrix]",
        "asked_at": datetime.now(UTC).isoformat(),
        "answers": ["p1"],
        "evidence_rels": [directed],
    }
    write(
        store,
        ("question_save", question),
        ("question_link_entities", {"id": "q1", "role": "TOPIC", "entity_ids": ["m1"]}),
        ("question_link_entities", {"id": "q1", "role": "ANSWER", "entity_ids": ["p1"]}),
    )
    return {"pending_before": pending_before, "hop_before_question": hop, "directed_eid": directed}


@covers("embed_count_pending_entities", "embed_pending_entities", "embed_pending_relation_types")
def test_embed_pending_kernels_track_the_model(store: Any, graph: dict[str, Any]) -> None:
    assert graph["pending_before"] == [{"pending": len(ENTITIES)}]
    assert run(store, "embed_count_pending_entities", model_id=META.model_id) == [{"pending": 0}]
    assert run(store, "embed_pending_entities", model_id=META.model_id, limit=10) == []
    assert len(run(store, "embed_pending_entities", model_id="another-model", limit=10)) == len(ENTITIES)
    assert run(store, "embed_pending_relation_types", model_id=META.model_id, limit=10) == []
    assert len(run(store, "embed_pending_relation_types", model_id="x", limit=10)) == len(TRIPLES)


@covers("entities_get")
def test_entities_get_skips_missing_ids(store: Any, graph: dict[str, Any]) -> None:
    rows = run(store, "entities_get", ids=["m1", "nope"])
    assert [(r["id"], r["name"], r["embedding"]) for r in rows] == [("m1", "The Matrix", ENTITIES["m1"][2])]


@covers("index_list")
def test_index_list_reports_online_indexes_with_vector_options(store: Any, graph: dict[str, Any]) -> None:
    names = {r["name"]: r for r in run(store, "index_list")}
    assert {"entity_embedding", "relation_type_embedding", "entity_name", "entity_name_norm"} <= set(names)
    assert names["entity_embedding"]["type"] == "VECTOR"
    info = store.info()
    vector = next(ix for ix in info.indexes if ix.name == "entity_embedding")
    assert (vector.dimensions, vector.similarity, vector.state) == (4, "cosine", "ONLINE")
    assert info.embedding == META
    store.check_search_indexes(META)


@covers("ingest_progress_get", "meta_get")
def test_progress_and_meta_round_trip(store: Any, graph: dict[str, Any]) -> None:
    [progress] = run(store, "ingest_progress_get", source_key="live-test")
    assert (progress["lines_done"], progress["complete"], progress["source"]) == (3, True, "memory")
    [meta] = run(store, "meta_get")
    assert meta == {
        "model_id": META.model_id,
        "dimension": 4,
        "similarity": "cosine",
        "schema_version": SCHEMA_VERSION,
    }


@covers("link_exact", "link_fulltext", "link_vector")
def test_linking_kernels_find_the_matrix(store: Any, graph: dict[str, Any]) -> None:
    [exact] = run(store, "link_exact", names_norm=[normalise_name("the matrix")], limit=5)
    assert exact["id"] == "m1" and isinstance(exact["eid"], str)

    fulltext = run(store, "link_fulltext", query="matrix", limit=5)
    assert fulltext[0]["id"] == "m1" and fulltext[0]["score"] > 0

    vector = run(store, "link_vector", embedding=[1.0, 0.0, 0.0, 0.0], k=2)
    assert [r["id"] for r in vector] == ["m1", "m2"]
    assert vector[0]["score"] == pytest.approx(1.0)  # Neo4j's (1 + cos) / 2, untouched by the adapter
    assert 0.5 < vector[1]["score"] < 1.0


@covers("subgraph_hop")
def test_subgraph_hop_returns_parallel_arrays(store: Any, graph: dict[str, Any]) -> None:
    hop = graph["hop_before_question"]
    triples = set(zip(hop["h_ids"], hop["r_types"], hop["t_ids"], strict=True))
    assert triples == {("m1", "DIRECTED_BY", "p1"), ("m1", "STARRED_ACTORS", "p2")}
    [capped] = run(store, "subgraph_hop", frontier_ids=["p2"], max_degree=1, max_triples=100)
    assert capped["h_ids"] == []  # p2 has degree 2 > max_degree: a hub is not expanded


@covers("question_get", "question_evidence")
def test_saved_question_shows_its_evidence(store: Any, graph: dict[str, Any]) -> None:
    [question] = run(store, "question_get", id="q1")
    assert question["answers"] == ["p1"] and question["evidence_rels"] == [graph["directed_eid"]]
    assert run(store, "question_evidence", id="q1") == [
        {"h_id": "m1", "rel_type": "DIRECTED_BY", "t_id": "p1", "rel_eid": graph["directed_eid"]}
    ]


@covers("relation_types_list", "stats_labels", "stats_relationship_types")
def test_listing_and_stats_kernels(store: Any, graph: dict[str, Any]) -> None:
    relation_types = run(store, "relation_types_list")
    assert [r["name"] for r in relation_types] == sorted(TRIPLES)
    assert relation_types[0]["embedding"] == RELATION_EMBEDDINGS["DIRECTED_BY"]
    labels = {r["label"]: r["count"] for r in run(store, "stats_labels")}
    assert {k: labels.get(k) for k in ("Entity", "Movie", "Person", "RelationType", "Question")} == {
        "Entity": 4,
        "Movie": 2,
        "Person": 2,
        "RelationType": 2,
        "Question": 1,
    }
    types = {r["type"]: r["count"] for r in run(store, "stats_relationship_types")}
    assert types == {"DIRECTED_BY": 1, "STARRED_ACTORS": 2, "TOPIC": 1, "ANSWER": 1}


@covers("typed_expand", "typed_expand_in")
def test_typed_expand_follows_one_direction_type_and_label(store: Any, graph: dict[str, Any]) -> None:
    rows = run(store, "typed_expand", source_ids=["m1"], rel_type="DIRECTED_BY", label="Person", limit=10)
    assert [r["target_id"] for r in rows] == ["p1"]
    rows = run(
        store, "typed_expand_in", source_ids=["p2"], rel_type="STARRED_ACTORS", label="Movie", limit=10
    )
    assert sorted(r["target_id"] for r in rows) == ["m1", "m2"]
    assert (
        run(store, "typed_expand", source_ids=["p2"], rel_type="STARRED_ACTORS", label="Movie", limit=10)
        == []
    )


@covers("mor_schema", "mor_nodes_get", "mor_text_vector", "mor_text_fulltext")
def test_mor_kernels_read_schema_nodes_and_texts(store: Any, graph: dict[str, Any]) -> None:
    triples = {(r["source_type"], r["rel_type"], r["target_type"]) for r in run(store, "mor_schema")}
    assert triples == {("Movie", "DIRECTED_BY", "Person"), ("Movie", "STARRED_ACTORS", "Person")}
    assert run(store, "mor_nodes_get", ids=["m1", "nope"])[0]["type"] == "Movie"
    near = run(store, "mor_text_vector", embedding=[1.0, 0.0, 0.0, 0.0], k=4, label="Movie")
    assert near[0]["id"] == "m1" and all(0.0 <= r["score"] <= 1.0 for r in near)
    assert run(store, "mor_text_fulltext", query="matrix", limit=5, label="Movie")[0]["id"] == "m1"


def test_a_syntax_error_comes_back_at_the_file_line(store: Any, graph: dict[str, Any]) -> None:
    bad = queries.parse_query(
        "// bad: broken on purpose\n// returns: n\nMATCH (n\nRETURN n\n", name="bad", path="bad.cypher"
    )
    with pytest.raises(QueryError) as info:
        store.run(bad, {})
    assert info.value.query == "bad" and info.value.line in (3, 4)


@covers("index_drop_vector_entity", "index_drop_vector_relation_type")
def test_dropped_vector_index_is_a_missing_index_error(store: Any, graph: dict[str, Any]) -> None:
    write(store, ("index_drop_vector_entity", {}))
    write(store, ("index_drop_vector_relation_type", {}))
    try:
        with pytest.raises(MissingIndexError) as info:
            run(store, "link_vector", embedding=[1.0, 0.0, 0.0, 0.0], k=1)
        assert "kgqa embed" in (info.value.hint or "")
    finally:
        schema.ensure_search_indexes(store, META)
        await_indexes(store)


def test_every_kernel_ran_on_the_live_server() -> None:
    missing = sorted(set(queries.names()) - COVERED)
    assert not missing, f"kernels with no live case in {__file__}: {missing}"
