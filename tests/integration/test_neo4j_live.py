"""Every kernel in ``cypher/`` on a real Neo4j server, through ``Neo4jStore``, plus what only a
server shows: a graph kgqa did not ingest read through a schema mapping (``kgqa prepare``),
evidence keys that survive deletes, float32 vectors, indexes awaited after creation, count-store
statistics, read timeouts, and ingest batches halved on a transaction-memory limit.

No Neo4j server can run where the default suite runs, so the dialect is otherwise checked by the
language-library lint and by executing the kernels on kglite. This module is how a user with a
server verifies it for real, in one command (README, "Running against Neo4j"). It is skipped
unless ``KGQA_TEST_NEO4J_URI`` is set::

    export NEO4J_PASSWORD=change-me-please
    docker compose up -d --wait neo4j && \
      KGQA_TEST_NEO4J_URI=bolt://localhost:7687 pytest -m neo4j tests/integration/test_neo4j_live.py

Optional: ``KGQA_TEST_NEO4J_USER`` (default ``neo4j``), ``KGQA_TEST_NEO4J_DATABASE`` (default
``neo4j``). The database must be EMPTY: the module refuses (skips) otherwise, and at the end it
deletes every node and the indexes and constraints the kernels created. The memory-limit test
changes ``db.memory.transaction.max`` for a moment (and restores it); where that cannot be
changed at run time (Community, Aura), it runs against a server started with a small limit
(``docker compose --profile lowmem up -d --wait neo4j-lowmem``, Bolt on 7688) and skips elsewhere.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
import torch
from hub_graphs import as_records, first_by_kernel_order, hub_records, mixed_hub_triples
from pydantic import SecretStr

from ingest.embedding import embed_store
from ingest.loader import load
from ingest.prepare import prepare_store
from ingest.prepare_plan import plan_prepare
from ingest.unprepare import unprepare_store
from kgqa.config import StoreSettings
from kgqa.errors import MissingIndexError, QueryError, StoreUnavailableError
from kgqa.names import normalise_name, relationship_type
from kgqa.retrieval.graph.subgraph import extract_subgraph
from kgqa.saved_questions import _save, browser_cypher, load_saved
from kgqa.store import queries, schema
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.protocol import Statement
from kgqa.store.stats import collect_stats
from kgqa.types import SCHEMA_VERSION, EmbeddingMeta, TripleRecord
from tests.mapped_graph import (
    KGQA_OWNED,
    MAPPING,
    SNAPSHOT_NODES,
    SNAPSHOT_RELS,
    TYPED_MAPPING,
    USER_GRAPH,
    write_typed_user_graph,
)

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
    "DROP CONSTRAINT kgqa_question_id IF EXISTS",
    "DROP CONSTRAINT kgqa_relation_type_name IF EXISTS",
    *(
        f"DROP INDEX {prefix}{name} IF EXISTS"
        for prefix in ("", "kgqa_")
        for name in (
            "entity_id",
            "entity_name_norm",
            "entity_name",
            "entity_text",
            "entity_embedding",
            "relation_type_embedding",
        )
    ),
)

# the write kernels the `graph` fixture runs (through kgqa.store.schema where a helper exists)
WRITTEN_BY_FIXTURE = (
    *schema.CONSTRAINT_KERNELS,
    "schema_constraint_entity_id",
    "index_create_entity_name_norm",
    *schema.VECTOR_INDEX_KERNELS,
    *schema.FULLTEXT_INDEX_KERNELS,
    schema.TEXT_INDEX_KERNEL,
    "entities_text_present",
    "ingest_entities",
    "ingest_triples",
    "ingest_entity_labels",
    "ingest_relation_types",
    "ingest_progress_set",
    "embed_set_entities_vector",
    "embed_set_relation_types",
    "meta_set",
    "question_save",
    "question_link_topics",
    "question_link_answers",
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


def cypher(store: Any, text: str, **params: Any) -> list[dict[str, Any]]:
    """Raw Cypher on the server, outside kgqa's kernels (set-up and inspection only)."""
    records, _, _ = store.driver.execute_query(text, params, database_=store.database)
    return [r.data() for r in records]


def plan_operators(store: Any, text: str, **params: Any) -> set[str]:
    """The operators of the plan Neo4j makes for ``text`` (EXPLAIN: nothing runs)."""
    _, summary, _ = store.driver.execute_query("EXPLAIN " + text, params, database_=store.database)
    found: set[str] = set()
    stack = [summary.plan]
    while stack:
        node = stack.pop()
        found.add(str(node["operatorType"]).split("@")[0])
        stack += node.get("children", [])
    return found


class LiveEmbedder:
    """META's model: deterministic 4-d vectors from the text's words (the test needs no real model)."""

    model_id, dimension = META.model_id, META.dimension

    def embed(self, texts: list[str]) -> torch.Tensor:
        rows = [torch.tensor([float(len(w) % 5) + 1.0 for w in (t.split() + ["a"] * 4)[:4]]) for t in texts]
        return torch.nn.functional.normalize(torch.stack(rows), dim=-1) if rows else torch.zeros(0, 4)


def live_settings(**overrides: Any) -> StoreSettings:
    password = os.environ.get("NEO4J_PASSWORD")
    if not password:
        pytest.skip("set NEO4J_PASSWORD for the server at KGQA_TEST_NEO4J_URI")
    values: dict[str, Any] = {
        "backend": "neo4j",
        "neo4j_uri": os.environ["KGQA_TEST_NEO4J_URI"],
        "neo4j_user": os.environ.get("KGQA_TEST_NEO4J_USER", "neo4j"),
        "neo4j_password": SecretStr(password),
        "neo4j_database": os.environ.get("KGQA_TEST_NEO4J_DATABASE", "neo4j"),
        "retry_attempts": 3,
    }
    return StoreSettings(**(values | overrides))


@pytest.fixture(scope="module")
def store() -> Iterator[Any]:
    from kgqa.store.neo4j_store import Neo4jStore

    settings = live_settings()
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
        ("embed_set_entities_vector", {"model_id": META.model_id, "rows": entity_vectors}),
        ("embed_set_relation_types", {"model_id": META.model_id, "rows": relation_vectors}),
        ("ingest_progress_set", progress),
    )
    schema.ensure_fulltext_indexes(store)
    schema.ensure_vector_indexes(store, META)  # the adapter awaits them: no explicit wait here
    schema.record_embedding_meta(store, META)

    [hop] = run(
        store, "subgraph_hop", frontier_ids=["m1"], max_degree=100, max_per_node=1000, max_triples=100
    )
    question = {
        "id": "q1",
        "text": "who directed [The Matrix]",
        "asked_at": datetime.now(UTC).isoformat(),
        "answers": ["p1"],
        "topic_ids": ["m1"],
        "answer_ids": ["p1"],
        "evidence_heads": ["m1"],
        "evidence_types": ["DIRECTED_BY"],
        "evidence_tails": ["p1"],
    }
    write(
        store,
        ("question_save", question),
        ("question_link_topics", {"id": "q1", "entity_ids": ["m1"]}),
        ("question_link_answers", {"id": "q1", "entity_ids": ["p1"]}),
    )
    return {"pending_before": pending_before, "hop_before_question": hop}


@covers("embed_count_pending_entities", "embed_pending_entities", "embed_pending_relation_types")
def test_embed_pending_kernels_track_the_model(store: Any, graph: dict[str, Any]) -> None:
    assert graph["pending_before"] == [{"pending": len(ENTITIES), "keyed": len(ENTITIES), "unkeyed": 0}]
    assert run(store, "embed_count_pending_entities", model_id=META.model_id) == [
        {"pending": 0, "keyed": len(ENTITIES), "unkeyed": 0}
    ]
    assert run(store, "embed_pending_entities", model_id=META.model_id, limit=10) == []
    assert len(run(store, "embed_pending_entities", model_id="another-model", limit=10)) == len(ENTITIES)
    assert run(store, "embed_pending_relation_types", model_id=META.model_id, limit=10) == []
    assert len(run(store, "embed_pending_relation_types", model_id="x", limit=10)) == len(TRIPLES)


@covers("entities_get", "entities_names")
def test_entities_get_skips_missing_ids(store: Any, graph: dict[str, Any]) -> None:
    rows = run(store, "entities_get", ids=["m1", "nope"])
    assert [(r["id"], r["name"], r["embedding"]) for r in rows] == [("m1", "The Matrix", ENTITIES["m1"][2])]
    assert run(store, "entities_names", ids=["m1", "nope"]) == [{"id": "m1", "name": "The Matrix"}]


@covers("index_list")
def test_index_list_reports_online_indexes_with_vector_options(store: Any, graph: dict[str, Any]) -> None:
    names = {r["name"]: r for r in run(store, "index_list")}
    assert {"entity_embedding", "relation_type_embedding", "entity_name", "entity_name_norm"} <= set(names)
    assert names["entity_embedding"]["type"] == "VECTOR"
    info = store.info()
    vector = next(ix for ix in info.indexes if ix.name == "entity_embedding")
    assert (vector.dimensions, vector.similarity, vector.state) == (4, "cosine", "ONLINE")
    assert info.embedding == META
    store.check_search_indexes(META)  # ONLINE right after creation: the adapter awaited each by name


@covers("ingest_progress_get", "meta_get", "meta_set_embedding_complete")
def test_progress_and_meta_round_trip(store: Any, graph: dict[str, Any]) -> None:
    [progress] = run(store, "ingest_progress_get", source_key="live-test")
    assert (progress["lines_done"], progress["complete"], progress["source"]) == (3, True, "memory")
    write(store, ("meta_set_embedding_complete", {"complete": True}))
    [meta] = run(store, "meta_get")
    assert meta == {
        "model_id": META.model_id,
        "dimension": 4,
        "similarity": "cosine",
        "schema_version": SCHEMA_VERSION,
        "embedding_complete": True,
        "mapping": None,
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


@covers("link_tied")
def test_link_tied_finds_a_relationship_or_a_neighbour_in_common_below_the_cap(
    store: Any, graph: dict[str, Any]
) -> None:
    # p1 directed m1, which p2 starred in; m2 is three steps from p1
    tied = run(store, "link_tied", topic="p1", ids=["m1", "m2", "p2"], max_degree=10)
    assert {r["id"] for r in tied} == {"m1", "p2"}
    capped = run(store, "link_tied", topic="p1", ids=["m1", "m2", "p2"], max_degree=1)
    assert {r["id"] for r in capped} == {"m1"}  # m1 has two relationships: too many to tie p2


@covers("subgraph_hop")
def test_subgraph_hop_returns_parallel_arrays(store: Any, graph: dict[str, Any]) -> None:
    hop = graph["hop_before_question"]
    triples = set(zip(hop["h_ids"], hop["r_types"], hop["t_ids"], strict=True))
    assert triples == {("m1", "DIRECTED_BY", "p1"), ("m1", "STARRED_ACTORS", "p2")}
    [capped] = run(
        store, "subgraph_hop", frontier_ids=["p2"], max_degree=1, max_per_node=1000, max_triples=100
    )
    assert capped["h_ids"] == []  # p2 has degree 2 > max_degree: a hub is not expanded


@covers("entities_head_types")
def test_entities_head_types_reads_the_types_asked_and_skips_hubs(store: Any, graph: dict[str, Any]) -> None:
    rows = run(
        store, "entities_head_types", ids=["m1", "p1", "nobody"], types=["DIRECTED_BY"], max_degree=1000
    )
    assert [(r["id"], r["r_type"]) for r in rows] == [("m1", "DIRECTED_BY")]  # p1 is DIRECTED_BY's tail
    assert run(store, "entities_head_types", ids=["m1"], types=["DIRECTED_BY"], max_degree=1) == []


@covers("question_get", "question_evidence", "question_browser")
def test_saved_question_shows_its_evidence(store: Any, graph: dict[str, Any]) -> None:
    [question] = run(store, "question_get", id="q1")
    assert question["answers"] == ["p1"]
    assert run(store, "question_evidence", id="q1") == [
        {"rank": 0, "h_id": "m1", "rel_type": "DIRECTED_BY", "t_id": "p1"}
    ]
    [drawn] = run(store, "question_browser", id="q1")  # one row: Browser's row limit cuts nothing
    assert [r["type"] for r in drawn["evidence"]] == ["DIRECTED_BY"]
    assert {e["properties"]["id"] for e in drawn["entities"]} == {"m1", "p1"}


@covers("relation_types_list", "stats_labels", "stats_relationship_types", "stats_relationship_type_count")
def test_listing_and_stats_kernels(store: Any, graph: dict[str, Any]) -> None:
    relation_types = run(store, "relation_types_list")
    assert [r["name"] for r in relation_types] == sorted(TRIPLES)
    assert relation_types[0]["embedding"] == RELATION_EMBEDDINGS["DIRECTED_BY"]
    stats = collect_stats(store)
    assert {
        k: stats.labels.get(k) for k in ("Entity", "Movie", "Person", "RelationType", "KgqaQuestion")
    } == {
        "Entity": 4,
        "Movie": 2,
        "Person": 2,
        "RelationType": 2,
        "KgqaQuestion": 1,
    }
    assert stats.relationship_types == {
        "DIRECTED_BY": 1,
        "STARRED_ACTORS": 2,
        "KGQA_TOPIC": 1,
        "KGQA_ANSWER": 1,
    }
    assert stats.embedded_entities == len(ENTITIES)
    # each type is counted with a literal type, which Neo4j answers from its count store, no scan
    kernel = store._prepare(queries.get("stats_relationship_type_count"), {"rel_type": "STARRED_ACTORS"})[0]
    assert "RelationshipCountFromCountStore" in plan_operators(store, kernel.body, rel_type="STARRED_ACTORS")


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


@covers("entities_similarity")
def test_entities_similarity_is_scored_by_the_server_as_by_the_embedded_store(
    store: Any, graph: dict[str, Any]
) -> None:
    """Major 6: vector.similarity.cosine on the server, one score per entity over the wire, on the
    vector index's scale, equal to what the embedded store computes for the same vectors."""
    rows = run(store, "entities_similarity", ids=["m1", "m2", "nope"], embedding=[1.0, 0.0, 0.0, 0.0])
    assert [r["id"] for r in rows] == ["m1", "m2"]
    m2 = torch.tensor(ENTITIES["m2"][2])
    expected = (1 + (m2[0] / m2.norm()).item()) / 2
    assert rows[0]["score"] == pytest.approx(1.0) and rows[1]["score"] == pytest.approx(expected, abs=1e-6)


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
        schema.ensure_vector_indexes(store, META)


# --- item 4: driver and operations ---------------------------------------------------------------


@covers("embed_set_entities")
def test_entity_vectors_are_stored_as_float32(store: Any, graph: dict[str, Any]) -> None:
    tenths = [0.1, 0.2, 0.3, 0.4]
    try:
        write(
            store,
            ("embed_set_entities", {"model_id": META.model_id, "rows": [{"id": "m2", "embedding": tenths}]}),
        )
        assert run(store, "entities_get", ids=["m2"])[0]["embedding"] == tenths  # a SET keeps float64
        write(
            store,
            (
                "embed_set_entities_vector",
                {"model_id": META.model_id, "rows": [{"id": "m2", "embedding": tenths}]},
            ),
        )
        stored = run(store, "entities_get", ids=["m2"])[0]["embedding"]
        assert stored != tenths and stored == torch.tensor(tenths, dtype=torch.float32).tolist()
    finally:
        rows = [{"id": "m2", "embedding": ENTITIES["m2"][2]}]
        write(store, ("embed_set_entities_vector", {"model_id": META.model_id, "rows": rows}))


def test_a_read_past_the_read_timeout_is_ended_by_the_server(graph: dict[str, Any]) -> None:
    from kgqa.store.neo4j_store import Neo4jStore

    slow = queries.parse_query(
        "// slow: counts for a long time\n// params: none\n// returns: n: int\n"
        "UNWIND range(1, 100000) AS x UNWIND range(1, 100000) AS y RETURN count(*) AS n\n",
        name="slow",
        path="slow.cypher",
    )
    with Neo4jStore.from_settings(live_settings(neo4j_read_timeout_s=0.2)) as short:
        with pytest.raises(QueryError, match="TransactionTimedOut|timed out|terminated"):
            short.run(slow)


def test_an_unreachable_server_names_the_cause(graph: dict[str, Any]) -> None:
    from kgqa.store.neo4j_store import Neo4jStore

    host = urlsplit(os.environ["KGQA_TEST_NEO4J_URI"]).hostname
    uri = f"bolt://{host}:1"  # nothing listens on port 1
    settings = live_settings(neo4j_uri=uri, retry_attempts=1, neo4j_connection_timeout_s=2.0)
    with pytest.raises(StoreUnavailableError, match=r"cannot reach Neo4j at .*:1 .*\S") as info:
        Neo4jStore.from_settings(settings)
    assert str(info.value.__cause__.__cause__ or info.value.__cause__)  # str(exc), never an AttributeError


_SIZE = re.compile(r"([\d.]+)\s*([KMGT]?)(?:i?B)?", re.I)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _setting_bytes(value: str) -> float:
    """A memory setting as SHOW SETTINGS prints it (``2.000MiB``, ``0B``, ``2097152``) in bytes
    (0: no limit, or a form this does not read)."""
    match = _SIZE.fullmatch(str(value).strip())
    return float(match.group(1)) * _UNITS[match.group(2).upper()] if match else 0.0


def test_an_ingest_batch_over_the_transaction_memory_limit_is_written_in_halves(
    store: Any, graph: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    setting = "db.memory.transaction.max"
    [before] = cypher(store, "SHOW SETTINGS YIELD name, value WHERE name = $name RETURN value", name=setting)
    try:
        cypher(store, "CALL dbms.setConfigValue($name, '2MiB')", name=setting)
        changed = True
    except Exception as exc:  # Community has no dbms.setConfigValue; Aura and non-admins may not
        if not 0 < _setting_bytes(before["value"]) <= 8 * 2**20:
            pytest.skip(
                f"cannot change {setting} on this server ({exc}); run this test against the server "
                "that sets it: docker compose --profile lowmem up -d --wait neo4j-lowmem, then "
                "KGQA_TEST_NEO4J_URI=bolt://localhost:7688 ... -k transaction_memory"
            )
        changed = False  # the server already limits transactions to a few MiB
    triples = [TripleRecord(f"mem-h{i}", "memory_test", f"mem-t{i}", line=i + 1) for i in range(20_000)]
    try:
        with caplog.at_level("WARNING", logger="ingest.loader"):
            report = load(
                store, triples, source="memory", fmt="t", source_key="live-memory", batch_size=20_000
            )
    finally:
        if changed:
            cypher(store, "CALL dbms.setConfigValue($name, $value)", name=setting, value=before["value"])
    assert "two halves" in caplog.text  # the 20k batch did not fit: it was split, not retried as is
    assert report.triple_records == 20_000
    assert collect_stats(store).relationship_types["MEMORY_TEST"] == 20_000
    [progress] = run(store, "ingest_progress_get", source_key="live-memory")
    assert progress["lines_done"] == 20_000 and progress["complete"]
    cypher(store, "MATCH (n:Entity) WHERE n.id STARTS WITH 'mem-' DETACH DELETE n")
    cypher(store, "MATCH (r:RelationType {name: 'MEMORY_TEST'}) DELETE r")


def test_ingest_triples_probes_and_creates_a_literal_type(store: Any, graph: dict[str, Any]) -> None:
    kernel, _ = store._prepare(queries.get("ingest_triples"), {"rel_type": "DIRECTED_BY", "rows": []})
    assert kernel.body.count("[:`DIRECTED_BY`]") == 3 and "$(" not in kernel.body  # two probes, one CREATE


# --- item 3: stable evidence ----------------------------------------------------------------------


def test_saved_evidence_keys_survive_deletes_and_point_at_no_other_edge(
    store: Any, graph: dict[str, Any]
) -> None:
    _save(
        store,
        "q-keys",
        "who starred in [The Matrix]",
        answers=["p2"],
        evidence=[("m1", "STARRED_ACTORS", "p2")],
        topic_ids=["m1"],
        answer_ids=["p2"],
    )
    assert load_saved(store, "q-keys").evidence == (("m1", "STARRED_ACTORS", "p2"),)
    cypher(store, "MATCH (:Entity {id: 'm1'})-[r:STARRED_ACTORS]->(:Entity {id: 'p2'}) DELETE r")
    cypher(
        store, "MATCH (a:Entity {id: 'm2'}), (b:Entity {id: 'p1'}) CREATE (a)-[:DIRECTED_BY]->(b)"
    )  # may reuse the id
    try:
        assert load_saved(store, "q-keys").evidence == ()  # gone, and nothing else drawn in its place
        [drawn] = run(store, "question_browser", id="q-keys")
        assert drawn["evidence"] == []  # topics and answers still drawn
        assert {e["properties"]["id"] for e in drawn["entities"]} == {"m1", "p2"}
    finally:
        cypher(store, "MATCH (:Entity {id: 'm2'})-[r:DIRECTED_BY]->(:Entity {id: 'p1'}) DELETE r")
        cypher(store, "MATCH (a:Entity {id: 'm1'}), (b:Entity {id: 'p2'}) MERGE (a)-[:STARRED_ACTORS]->(b)")
    assert load_saved(store, "q-keys").evidence == (("m1", "STARRED_ACTORS", "p2"),)  # the same fact again
    cypher(store, "MATCH (q:KgqaQuestion {id: 'q-keys'}) DETACH DELETE q")


@covers("prepare_unkeyed_sample")
def test_entities_without_a_string_id_are_skipped_not_looped_on(store: Any, graph: dict[str, Any]) -> None:
    """Blocker 1 of issue 29: an :Entity without id, or with a number id and no name, used to come
    back as pending forever; now embed skips and counts them, and ask is not refused. (Before the
    mapped-graph test: that one records its mapping in the shared :KgqaMeta node.)"""
    cypher(store, "CREATE (:Entity {name: 'no id'}), (:Entity {id: 42}), (:Entity {id: 'odd-bare'})")
    try:
        assert [r["id"] for r in run(store, "prepare_unkeyed_sample", limit=5)] in ([None, 42], [42, None])
        report = embed_store(store, LiveEmbedder())
        assert report.entities_skipped == 2 and report.entities_embedded == 1  # 'odd-bare', by its id
        schema.check_query_embedder(store, META)
        assert collect_stats(store).unkeyed_entities == 2
    finally:
        cypher(store, "MATCH (e:Entity) WHERE e.id IS NULL OR e.id IN [42, 'odd-bare'] DETACH DELETE e")


# --- item 1: a graph kgqa did not ingest, read through a schema mapping -------------------------


def _user_data(store: Any) -> list[str]:
    rows = cypher(store, SNAPSHOT_NODES)
    nodes = sorted(
        repr((r["labels"], {k: v for k, v in sorted(r["props"].items()) if k not in KGQA_OWNED}))
        for r in rows
    )
    return nodes + [repr(r) for r in cypher(store, SNAPSHOT_RELS)]


@covers(
    "index_create_entity_id",
    "prepare_pending_names",
    "prepare_set_names",
    "schema_constraint_kgqa_question_id",
)
def test_prepare_embed_and_ask_on_a_mapped_graph(store: Any, graph: dict[str, Any]) -> None:
    from kgqa.store.neo4j_store import Neo4jStore

    cypher(store, USER_GRAPH)
    fields = MAPPING
    settings = live_settings(
        entity_label=fields.entity_label,
        entity_id_property=fields.id_property,
        entity_name_property=fields.name_property,
        entity_text_property=fields.text_property,
        fact_types=fields.fact_types,
    )
    with Neo4jStore.from_settings(settings) as mapped:
        assert mapped.mapping == MAPPING
        before = _user_data(mapped)
        assert "kgqa_entity_id" not in {r["name"] for r in run(mapped, "index_list")}

        report = prepare_store(mapped)
        assert report.names_normalised == 4 and report.relation_types == ["DIRECTED BY", "STARRED"]
        entities_get = mapped._prepare(queries.get("entities_get"), {"ids": ["m1"]})[0].body
        assert "NodeIndexSeek" in plan_operators(mapped, entities_get, ids=["m1"])  # no label scan per row
        embedded = embed_store(mapped, LiveEmbedder())
        assert embedded.entities_embedded == 4 and embedded.relation_types_embedded == 2

        assert _user_data(mapped) == before  # labels, properties (their `embedding` too), relationships
        [props] = cypher(mapped, "MATCH (n:`Film Thing` {uid: 'm1'}) RETURN properties(n) AS p")
        assert props["p"]["embedding"] == [9.0, 9.0] and props["p"]["kgqa_name_norm"] == "matrix"
        assert cypher(mapped, "MATCH (q:Question) RETURN q.id AS id") == [{"id": "user-q"}]

        schema.check_query_embedder(mapped, META)
        mapped.check_search_indexes(META)  # kgqa_* indexes, ONLINE right after creation
        linked = run(mapped, "link_exact", names_norm=["matrix"], limit=5)
        assert [(r["id"], r["name"]) for r in linked] == [("m1", "The Matrix")]
        assert [r["id"] for r in run(mapped, "link_fulltext", query="speed", limit=5)] == ["m2"]
        assert len(run(mapped, "link_vector", embedding=[1.0, 0.0, 0.0, 0.0], k=2)) == 2
        sub = extract_subgraph(mapped, ["m1"], hops=2, max_triples=100, max_degree=100)
        triples = {sub.triple(i) for i in range(sub.num_triples)}
        assert triples == {("m1", "DIRECTED BY", "p1"), ("m1", "STARRED", "p2"), ("m2", "STARRED", "p2")}

        _save(
            mapped,
            "q-mapped",
            "who directed the matrix",
            answers=["p1"],
            evidence=[("m1", "DIRECTED BY", "p1")],
            topic_ids=["m1"],
            answer_ids=["p1"],
        )
        saved = load_saved(mapped, "q-mapped")
        assert saved.evidence == (("m1", "DIRECTED BY", "p1"),)
        query = saved.browser_cypher.split(";", 1)[1].strip().rstrip(";")  # what Browser runs after :param
        assert query == browser_cypher("q-mapped", MAPPING).split(";", 1)[1].strip().rstrip(";")
        [drawn] = cypher(mapped, query, id="q-mapped")
        assert len(drawn["evidence"]) == 1 and len(drawn["entities"]) >= 2

        assert prepare_store(mapped).names_normalised == 0  # a re-run writes nothing new


@covers("ingest_degrees_backfill", "subgraph_hop")
def test_hub_subgraph_is_the_embedded_stores(store: Any, graph: dict[str, Any], tmp_path: Path) -> None:
    """The same hub question gives the same subgraph on Neo4j as on kglite: per-node and global
    caps keep the same triples in the same order, whatever order either store keeps them in."""
    caps = {"hops": 3, "max_degree": 20, "max_per_node": 15, "max_triples": 40}
    load(store, hub_records("hub-", seed=11), source="hub", fmt="test", source_key="hub-live")
    with KgliteStore(tmp_path / "hub.kgl") as embedded:
        load(embedded, hub_records("hub-"), source="hub", fmt="test", source_key="hub")
        expected = extract_subgraph(embedded, ["hub-H"], **caps)
    got = extract_subgraph(store, ["hub-H"], **caps)
    assert [got.triple(i) for i in range(got.num_triples)] == [
        expected.triple(i) for i in range(expected.num_triples)
    ]
    assert got.entity_ids == expected.entity_ids and "hub-G" in got.entity_ids


@covers(
    "ingest_slices_pending",
    "ingest_slices_build",
    "ingest_degrees_backfill",
    "subgraph_hop",
    "ingest_heavy_heads",
    "ingest_out_pairs",
    "ingest_triples_absent",
)
def test_hub_slices_serve_the_rows_of_the_full_order(
    store: Any, graph: dict[str, Any], tmp_path: Path
) -> None:
    """Slices built at load end on Neo4j serve the rows of the full order, the same as kglite's;
    a re-run builds none; the stored degrees and slice counts are the server's; and the kernel
    reads the slice (a far id dropped from it, with its count, goes missing). Loaded in small
    batches with a low heavy-head threshold, so rows out of the head hubs take the read-once path
    (ingest.heavy_heads)."""
    cap, hubs = 12, ["sl-T0", "sl-T1", "sl-S0", "sl-S1"]
    triples = mixed_hub_triples(seed=5, prefix="sl-")
    report = load(
        store,
        as_records(triples, seed=3),
        source="sl",
        fmt="test",
        source_key="sl-live",
        slice_cap=cap,
        batch_size=20,
        heavy_out_degree=5,
    )
    again = load(
        store,
        as_records(triples),
        source="sl",
        fmt="test",
        source_key="sl-live",
        force=True,
        slice_cap=cap,
        batch_size=20,
        heavy_out_degree=5,
    )
    assert again.writes.total == 0 and again.slices_built == 0

    def hop(target: Any, hub: str, per_node: int) -> list[tuple[str, str, str]]:
        [row] = run(
            target,
            "subgraph_hop",
            frontier_ids=[hub],
            max_degree=None,
            max_per_node=per_node,
            max_triples=999,
        )
        return list(zip(row["h_ids"], row["r_types"], row["t_ids"], strict=True))

    with KgliteStore(tmp_path / "slices.kgl") as embedded:
        embedded_report = load(
            embedded, as_records(triples), source="sl", fmt="test", source_key="sl", slice_cap=cap
        )
        assert report.slices_built == embedded_report.slices_built > 0
        slice_rows_on_kglite = {
            r["id"]: r["n"]
            for r in embedded.graph.cypher(
                "MATCH (e:Entity) WHERE e.id STARTS WITH 'sl-' RETURN e.id AS id, e.kgqa_slice_rows AS n"
            ).to_list()
        }
        for hub in hubs:
            for per_node in (5, cap, cap + 7):  # the last one past the slice's cap: the full order
                expected = first_by_kernel_order(triples, hub, per_node)
                assert hop(store, hub, per_node) == hop(embedded, hub, per_node) == expected, (hub, per_node)
    degrees = cypher(
        store,
        "MATCH (e:Entity) WHERE e.id STARTS WITH 'sl-' AND (e.kgqa_degree <> COUNT { (e)--() } "
        "OR e.kgqa_out_degree <> COUNT { (e)-->() }) RETURN e.id AS id",
    )
    assert degrees == []
    counts = "MATCH (e:Entity) WHERE e.id STARTS WITH 'sl-' RETURN e.id AS id, e.kgqa_slice_rows AS n"
    assert {r["id"]: r["n"] for r in cypher(store, counts)} == slice_rows_on_kglite
    [heads] = cypher(
        store, "MATCH (e:Entity {id: 'sl-T0'}) RETURN e.kgqa_slice_heads AS far, e.kgqa_slice_tails AS tails"
    )
    dropped = next(far for far in heads["far"] if far not in heads["tails"])
    cypher(
        store,
        "MATCH (e:Entity {id: 'sl-T0'}), (far:Entity {id: $far}) "
        "SET e.kgqa_slice_heads = [x IN e.kgqa_slice_heads WHERE x <> $far], "
        "e.kgqa_slice_rows = e.kgqa_slice_rows - COUNT { (far)-->(e) }",
        far=dropped,
    )
    assert not any(dropped in (h, t) for h, _, t in hop(store, "sl-T0", cap))


@covers("ingest_slices_pending", "ingest_slices_build", "subgraph_hop")
def test_a_fact_swapped_under_a_slice_is_caught_by_its_count(store: Any, graph: dict[str, Any]) -> None:
    """A fact of a hub's slice deleted and another added (the degree unchanged): the hop gives the
    new graph's rows (the slice walk no longer finds the count it was built with), the hub is
    listed stale, and a refresh rebuilds it."""
    from ingest.slices import refresh_slices

    cap = 12
    triples = mixed_hub_triples(seed=5, prefix="sw-")
    load(store, as_records(triples), source="sw", fmt="test", source_key="sw-live", slice_cap=cap)
    gone = first_by_kernel_order(triples, "sw-T0", cap)[0]
    cypher(
        store,
        "MATCH (:Entity {id: $h})-[r]->(:Entity {id: $t}) WHERE type(r) = $r DELETE r",
        h=gone[0],
        r=gone[1],
        t=gone[2],
    )
    cypher(
        store, "MATCH (t:Entity {id: 'sw-T0'}) CREATE (:Entity {id: 'sw-0new', name: 'new'})-[:NEW_FACT]->(t)"
    )
    now = [t for t in triples if (t[0], relationship_type(t[1]), t[2]) != gone] + [
        ("sw-0new", "new_fact", "sw-T0")
    ]
    params = {"frontier_ids": ["sw-T0"], "max_degree": None, "max_per_node": cap, "max_triples": 999}
    [row] = run(store, "subgraph_hop", **params)
    assert list(zip(row["h_ids"], row["r_types"], row["t_ids"], strict=True)) == first_by_kernel_order(
        now, "sw-T0", cap
    )
    stale = [
        r["id"] for r in run(store, "ingest_slices_pending", max_per_node=cap) if r["id"].startswith("sw-")
    ]
    assert "sw-T0" in stale
    refresh_slices(store, cap)
    assert not [r for r in run(store, "ingest_slices_pending", max_per_node=cap) if r["id"].startswith("sw-")]
    cypher(store, "MATCH (e:Entity) WHERE e.id STARTS WITH 'sw-' DETACH DELETE e")


# --- issue 29: a user's own graph, prepared, unprepared -------------------------------------------


def test_plans_bind_both_ends_before_the_relationship(store: Any, graph: dict[str, Any]) -> None:
    """Major 5: the evidence, Browser and slice queries seek both entities by index and match the
    relationship between them with Expand(Into), never Expand(All) from a hub (EXPLAIN: nothing runs)."""
    seeks = {"NodeIndexSeek", "NodeUniqueIndexSeek"}  # the id is a uniqueness constraint here
    evidence = plan_operators(store, queries.get("question_evidence").body, id="q1")
    assert evidence & seeks and "Expand(Into)" in evidence and "Expand(All)" not in evidence
    browser = plan_operators(store, queries.get("question_browser").body, id="q1")
    assert browser & seeks and "Expand(Into)" in browser and "Expand(All)" not in browser
    assert "NodeIndexSeek" in plan_operators(
        store, queries.get("link_exact").body, names_norm=["the matrix"], limit=5
    )
    hop = store._prepare(queries.get("subgraph_hop"), HOP_PARAMS)[0].body
    assert "Expand(Into)" in plan_operators(store, hop, **HOP_PARAMS)  # the slice branch


HOP_PARAMS = {"frontier_ids": ["m1"], "max_degree": 100, "max_per_node": 10, "max_triples": 100}


class CommitsThenDrops:
    """A driver session whose first managed write commits and then loses the connection."""

    dropped = False

    def __init__(self, session: Any) -> None:
        self.session = session

    def __enter__(self) -> CommitsThenDrops:
        self.session.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.session.__exit__(*exc)

    def execute_write(self, work: Any, *args: Any, **kwargs: Any) -> Any:
        from neo4j.exceptions import IncompleteCommit

        out = self.session.execute_write(work, *args, **kwargs)
        if not CommitsThenDrops.dropped:
            CommitsThenDrops.dropped = True
            raise IncompleteCommit("the connection dropped after the commit (injected)")
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def test_an_incomplete_commit_of_a_committed_batch_is_not_run_again(
    store: Any, graph: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Major 4: the batch committed, the driver says IncompleteCommit; the resume point is found
    stored, so the blind CREATEs of ingest_triples_absent are not applied twice."""
    triples = mixed_hub_triples(seed=9, prefix="ic-")
    original = store._session
    monkeypatch.setattr(store, "_session", lambda: CommitsThenDrops(original()))
    load(store, as_records(triples), source="ic", fmt="test", source_key="ic-live", heavy_out_degree=1)
    monkeypatch.setattr(store, "_session", original)
    assert CommitsThenDrops.dropped
    doubled = cypher(
        store,
        "MATCH (h:Entity)-[r]->(t:Entity) WHERE h.id STARTS WITH 'ic-' "
        "WITH h, type(r) AS ty, t, count(*) AS n WHERE n > 1 RETURN count(*) AS doubled",
    )
    assert doubled == [{"doubled": 0}]
    [count] = cypher(store, "MATCH (h:Entity)-[r]->() WHERE h.id STARTS WITH 'ic-' RETURN count(r) AS n")
    assert count["n"] == len(set(triples))
    wrong = cypher(
        store,
        "MATCH (e:Entity) WHERE e.id STARTS WITH 'ic-' AND e.kgqa_degree <> COUNT { (e)--() } "
        "RETURN e.id AS id",
    )
    assert wrong == []


def _wipe(store: Any) -> None:
    cypher(store, "MATCH (n) DETACH DELETE n")
    for statement in CLEANUP_DDL:
        cypher(store, statement)


def _database_snapshot(store: Any) -> dict[str, Any]:
    """Counts of labels and types, every node's labels and properties, the indexes and constraints."""
    return {
        "stats": {k: v for k, v in collect_stats(store).to_dict().items() if k != "store"},
        "nodes": sorted(
            repr((sorted(r["l"]), sorted(r["p"].items())))
            for r in cypher(store, "MATCH (n) RETURN labels(n) AS l, properties(n) AS p")
        ),
        "indexes": sorted(r["name"] for r in cypher(store, "SHOW INDEXES YIELD name RETURN name")),
        "constraints": sorted(r["name"] for r in cypher(store, "SHOW CONSTRAINTS YIELD name RETURN name")),
    }


@covers(
    "prepare_estimate",
    "meta_set_mapping",
    "meta_delete",
    "embed_foreign_vectors",
    "unprepare_entities",
    "unprepare_nodes",
    "index_drop_entity_id",
    "index_drop_entity_name_norm",
    "index_drop_fulltext_entity",
    "index_drop_fulltext_entity_text",
    "schema_drop_constraint_relation_type_name",
    "schema_drop_constraint_kgqa_question_id",
)
def test_dry_run_writes_nothing_and_unprepare_restores_the_database(
    store: Any, graph: dict[str, Any]
) -> None:
    """``kgqa prepare --dry-run`` then ``prepare`` + ``embed`` + ``ask --save --link-entities`` then
    ``kgqa unprepare``: labels, properties, indexes and constraints as before (property keys stay
    in Neo4j's token store, which nothing can remove, so they are not compared)."""
    from kgqa.store.neo4j_store import Neo4jStore

    _wipe(store)
    cypher(store, USER_GRAPH)
    fields = MAPPING
    settings = live_settings(
        entity_label=fields.entity_label,
        entity_id_property=fields.id_property,
        entity_name_property=fields.name_property,
        entity_text_property=fields.text_property,
        fact_types=fields.fact_types,
    )
    with Neo4jStore.from_settings(settings) as mapped:
        before = _database_snapshot(mapped)
        plan = plan_prepare(mapped, model_id=META.model_id, dimension=META.dimension, slice_cap=1)
        assert plan.keyed == 4 and plan.total_bytes > 0
        after_dry_run = _database_snapshot(mapped)
        assert after_dry_run == before

        prepare_store(mapped, slice_cap=1)
        embed_store(mapped, LiveEmbedder())
        _save(
            mapped,
            "q-undo",
            "who directed the matrix",
            answers=["p1"],
            evidence=[("m1", "DIRECTED BY", "p1")],
            topic_ids=["m1"],
            answer_ids=["p1"],
            link_entities=True,
        )
        unprepare_store(mapped, page_size=2)
        after = _database_snapshot(mapped)
        assert after == before
    _wipe(store)


def test_a_users_fulltext_index_on_the_name_is_reused_not_shadowed(store: Any) -> None:
    """Major 3: a user's full-text index on (label, name) makes kgqa's CREATE ... IF NOT EXISTS a
    no-op; kgqa then finds it by schema and queries it, and unprepare leaves it in place."""
    from kgqa.store.neo4j_store import Neo4jStore

    _wipe(store)
    cypher(store, USER_GRAPH)
    cypher(store, "CREATE FULLTEXT INDEX user_titles FOR (n:`Film Thing`) ON EACH [n.title]")
    cypher(store, "CALL db.awaitIndex('user_titles', 300)")
    fields = MAPPING
    settings = live_settings(
        entity_label=fields.entity_label,
        entity_id_property=fields.id_property,
        entity_name_property=fields.name_property,
        entity_text_property=fields.text_property,
        fact_types=fields.fact_types,
    )
    try:
        with Neo4jStore.from_settings(settings) as mapped:
            prepare_store(mapped)
            embed_store(mapped, LiveEmbedder())
            names = {r["name"] for r in cypher(mapped, "SHOW INDEXES YIELD name RETURN name")}
            assert "user_titles" in names and "kgqa_entity_name" not in names
            mapped.check_search_indexes(META)  # found by schema: no "run kgqa prepare"
            assert [r["id"] for r in run(mapped, "link_fulltext", query="speed", limit=5)] == ["m2"]
            unprepare_store(mapped)
            names = {r["name"] for r in cypher(mapped, "SHOW INDEXES YIELD name RETURN name")}
            assert "user_titles" in names and not any(n.startswith("kgqa_") for n in names)
    finally:
        cypher(store, "DROP INDEX user_titles IF EXISTS")
        _wipe(store)


def _failed_user_index(store: Any) -> str | None:
    """Make an index of the user's FAIL (a range index over a string past its key size limit, so its
    population fails); its failure message, or None where this server indexes the value anyway."""
    from neo4j.exceptions import Neo4jError

    cypher(store, "CREATE (:UserBlob {big: $big})", big="x" * 40_000)
    try:
        cypher(store, "CREATE RANGE INDEX user_blob_big FOR (n:UserBlob) ON (n.big)")
    except Neo4jError:  # refused up front rather than failed while populating
        return None
    for _ in range(60):
        [row] = cypher(
            store,
            "SHOW INDEXES YIELD name, state, failureMessage WHERE name = 'user_blob_big' "
            "RETURN state, failureMessage",
        )
        if row["state"] == "FAILED":
            return str(row["failureMessage"])
        if row["state"] == "ONLINE":
            return None
        time.sleep(0.5)
    return None


def test_a_failed_index_of_the_users_is_never_waited_on(store: Any) -> None:
    """Major 2: the database holds a FAILED index of the user's; prepare and embed create kgqa's
    indexes and wait on those alone (by name), so the run succeeds and the search indexes pass the
    pre-flight; the user's index is left FAILED, as found."""
    from kgqa.store.neo4j_store import Neo4jStore

    _wipe(store)
    try:
        if _failed_user_index(store) is None:
            pytest.skip("this server indexed the 40,000-character value: no FAILED index to test with")
        cypher(store, USER_GRAPH)
        fields = MAPPING
        settings = live_settings(
            entity_label=fields.entity_label,
            entity_id_property=fields.id_property,
            entity_name_property=fields.name_property,
            entity_text_property=fields.text_property,
            fact_types=fields.fact_types,
            neo4j_index_wait_s=60.0,
        )
        with Neo4jStore.from_settings(settings) as mapped:
            prepare_store(mapped)
            embed_store(mapped, LiveEmbedder())
            mapped.check_search_indexes(META)
            states = {
                r["name"]: r["state"] for r in cypher(mapped, "SHOW INDEXES YIELD name, state RETURN *")
            }
            assert states["user_blob_big"] == "FAILED"
            assert all(state == "ONLINE" for name, state in states.items() if name.startswith("kgqa_"))
            assert [r["id"] for r in run(mapped, "link_fulltext", query="speed", limit=5)] == ["m2"]
    finally:
        cypher(store, "DROP INDEX user_blob_big IF EXISTS")
        _wipe(store)


def test_mor_reads_a_typed_user_graph_through_the_mapping(store: Any) -> None:
    """MoR on a mapped graph: the hpo_mini graph in a user's schema (type in ``kind``), prepared
    and embedded on the server; MoR's schema, typed traversal and text matching read it through
    the mapping, from the text index prepare built."""
    from kgqa.retrieval.mor.plan import parse_metapath
    from kgqa.retrieval.mor.traversal import Anchors, TraversalSettings, Traverser, read_schema
    from kgqa.store.neo4j_store import Neo4jStore

    _wipe(store)
    write_typed_user_graph(lambda text, params: cypher(store, text, **params))
    fields = TYPED_MAPPING
    settings = live_settings(
        entity_label=fields.entity_label,
        entity_id_property=fields.id_property,
        entity_name_property=fields.name_property,
        entity_text_property=fields.text_property,
        entity_type_property=fields.type_property,
    )
    try:
        with Neo4jStore.from_settings(settings) as mapped:
            prepare_store(mapped)
            embed_store(mapped, LiveEmbedder())
            mapped.check_search_indexes(META)
            names = {r["name"] for r in cypher(mapped, "SHOW INDEXES YIELD name RETURN name")}
            assert "kgqa_entity_text" in names
            assert ("Disease", "DISEASE_PHENOTYPE_POSITIVE", "Phenotype") in read_schema(mapped).triples
            traverser = Traverser(mapped, LiveEmbedder(), TraversalSettings())
            plan = parse_metapath("Disease* -DISEASE_PHENOTYPE_POSITIVE-> Phenotype[name]")
            reached = traverser.run_chain(0, plan.chains[0], Anchors({}, {(0, 1): [("HP:3", 1.0)]}, ""))
            assert sorted(reached) == ["D:1", "D:2"]  # seizure's diseases, by the typed expand
            rows = run(mapped, "mor_text_fulltext", query="earlobe", limit=10, label="Phenotype")
            assert {r["id"] for r in rows} >= {"HP:1", "HP:2"}
    finally:
        _wipe(store)


def test_every_kernel_ran_on_the_live_server() -> None:
    missing = sorted(set(queries.names()) - COVERED)
    assert not missing, f"kernels with no live case in {__file__}: {missing}"
