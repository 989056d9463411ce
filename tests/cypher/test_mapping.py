"""kgqa.store.mapping and ingest.prepare on the embedded store: every kernel rendered for a user's
schema, then the prepare -> embed -> link -> subgraph -> save path on a graph kgqa did not ingest.

test_lint.py lints the same rendered kernels with Neo4j's parser; the live suite
(tests/integration/test_neo4j_live.py) runs this path on a server.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ingest.embedding import embed_store
from ingest.prepare import prepare_store
from kgqa.errors import ConfigError
from kgqa.retrieval.graph.subgraph import extract_subgraph
from kgqa.saved_questions import _save, browser_cypher, load_saved
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.mapping import GraphMapping
from kgqa.store.schema import check_query_embedder
from kgqa.store.stats import collect_stats
from kgqa.types import EmbeddingMeta
from tests.mapped_graph import KGQA_OWNED, MAPPING, SNAPSHOT_NODES, SNAPSHOT_RELS, USER_GRAPH

CODE_ONLY = re.compile(r"'(?:[^'\\]|\\.)*'|`(?:[^`]|``)*`|//[^\n]*")


def _raw(store: KgliteStore, text: str) -> list[dict[str, Any]]:
    return store.graph.cypher(text).to_list()


def _user_data(store: KgliteStore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = _raw(store, SNAPSHOT_NODES)
    for node in nodes:
        node["props"] = {k: v for k, v in node["props"].items() if k not in KGQA_OWNED}
    return nodes, _raw(store, SNAPSHOT_RELS)


@pytest.fixture
def user_store(tmp_path: Path) -> KgliteStore:
    store = KgliteStore(tmp_path / "user.kgl", mapping=MAPPING)
    store.graph.cypher(USER_GRAPH)
    return store


@pytest.mark.parametrize("name", queries.names())
def test_default_mapping_runs_kernels_verbatim(name: str) -> None:
    assert GraphMapping().render(queries.get(name)) is queries.get(name)


@pytest.mark.parametrize("name", queries.names())
def test_mapped_kernel_keeps_no_kgqa_entity_names(name: str) -> None:
    query = MAPPING.render(queries.get(name))
    code = CODE_ONLY.sub(" ", query.body)
    assert not re.search(r":\s*(Entity|RelationType)\b", code), query.body
    assert not re.search(r"\b(e|h|t|f|s|n|node)\.(id|name|text|name_norm|embedding|embedding_model)\b", code)
    assert not re.search(r"\b(CONSTRAINT|INDEX)\s+(entity|relation_type)_", code)
    assert "'entity_" not in query.body and "'relation_type_" not in query.body
    assert query.params == queries.get(name).params  # callers pass the same parameters


def test_render_quotes_every_mapped_name() -> None:
    mapping = GraphMapping.of(entity_label="Odd`Label", id_property="my id", fact_types=("A`B",))
    body = mapping.render(queries.get("entities_get")).body
    assert "MATCH (e:`Odd``Label` {`my id`: id})" in body and "e.`my id` AS id" in body
    assert "`A``B`" in mapping.render(queries.get("subgraph_hop")).body


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"entity_label": ""}, "store.entity_label"),
        ({"id_property": "a\x00b"}, "store.entity_id_property"),
        ({"entity_label": "KgqaQuestion"}, "kgqa's own labels"),
        ({"fact_types": ("OK", "")}, r"store.fact_types\[1\]"),
    ],
)
def test_unusable_mapping_is_a_config_error_naming_the_key(overrides: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        GraphMapping.of(**overrides)


def test_embedding_property_defaults_to_a_kgqa_one_on_a_mapped_graph() -> None:
    assert GraphMapping.of().embedding_property == "embedding"
    assert GraphMapping.of(entity_label="Thing").embedding_property == "kgqa_embedding"
    assert GraphMapping.of(entity_label="Thing", embedding_property="vec").embedding_property == "vec"


def test_prepare_then_ask_path_on_a_graph_kgqa_did_not_ingest(
    user_store: KgliteStore, fake_embedder: Any
) -> None:
    before = _user_data(user_store)

    report = prepare_store(user_store)
    assert report.names_normalised == 4 and report.relation_types == ["DIRECTED BY", "STARRED"]
    embedded = embed_store(user_store, fake_embedder)
    assert embedded.entities_embedded == 4 and embedded.relation_types_embedded == 2

    # the user's labels, properties (their own `embedding` included) and relationships are intact
    assert _user_data(user_store) == before
    matrix = _raw(user_store, "MATCH (n:`Film Thing` {uid: 'm1'}) RETURN properties(n) AS p")[0]["p"]
    assert matrix["embedding"] == [9.0, 9.0] and matrix["kgqa_name_norm"] == "matrix"
    assert len(matrix["kgqa_embedding"]) == fake_embedder.dimension
    assert _raw(user_store, "MATCH (n:Entity) RETURN count(n) AS c")[0]["c"] == 0  # no kgqa label added
    names = {r["name"] for r in user_store.run(queries.get("index_list"))}
    assert {"kgqa_entity_id", "kgqa_entity_name_norm", "kgqa_entity_name", "kgqa_entity_embedding"} <= names

    # the ask path's kernels, through the mapping
    check_query_embedder(user_store, EmbeddingMeta(fake_embedder.model_id, fake_embedder.dimension))
    linked = user_store.run(queries.get("link_exact"), {"names_norm": ["matrix"], "limit": 5})
    assert [(r["id"], r["name"]) for r in linked] == [("m1", "The Matrix")]
    vector = fake_embedder.embed(["Keanu Reeves"])[0].tolist()
    assert user_store.run(queries.get("link_vector"), {"embedding": vector, "k": 1})[0]["id"] == "p2"
    fulltext = user_store.run(queries.get("link_fulltext"), {"query": "speed", "limit": 5})
    assert [r["id"] for r in fulltext] == ["m2"]
    sub = extract_subgraph(user_store, ["m1"], hops=2, max_triples=100, max_degree=100)
    triples = {sub.triple(i) for i in range(sub.num_triples)}
    assert triples == {("m1", "DIRECTED BY", "p1"), ("m1", "STARRED", "p2"), ("m2", "STARRED", "p2")}
    types = user_store.run(queries.get("relation_types_list"))
    assert [(r["name"], r["text"], len(r["embedding"])) for r in types] == [
        ("DIRECTED BY", "directed by", fake_embedder.dimension),
        ("STARRED", "starred", fake_embedder.dimension),
    ]

    # saved evidence, read back and drawn by the Browser query, next to the user's own :Question
    _save(
        user_store,
        "q-1",
        "who directed the matrix",
        answers=["p1"],
        evidence=[("m1", "DIRECTED BY", "p1")],
        topic_ids=["m1"],
        answer_ids=["p1"],
    )
    saved = load_saved(user_store, "q-1")
    assert saved.evidence == (("m1", "DIRECTED BY", "p1"),)
    assert saved.browser_cypher == browser_cypher("q-1", MAPPING) and "`Film Thing`" in saved.browser_cypher
    [drawn] = user_store.run(queries.get("question_browser"), {"id": "q-1"})
    assert len(drawn["evidence"]) == 1 and len(drawn["entities"]) >= 2
    assert _raw(user_store, "MATCH (q:Question) RETURN q.id AS id") == [{"id": "user-q"}]

    stats = collect_stats(user_store)
    assert stats.embedded_entities == 4 and stats.labels["Film Thing"] == 4
    assert stats.relationship_types["STARRED"] == 2 and stats.relationship_types["LIKES"] == 1

    again = prepare_store(user_store)  # resumable and idempotent: nothing left to normalise
    assert again.names_normalised == 0 and embed_store(user_store, fake_embedder).entities_embedded == 0


def test_prepare_without_fact_types_reads_every_type_but_kgqa_own(tmp_path: Path) -> None:
    store = KgliteStore(
        tmp_path / "all.kgl", mapping=GraphMapping.of(entity_label="Film Thing", id_property="uid")
    )
    store.graph.cypher(USER_GRAPH)
    store.graph.cypher("MATCH (a {uid: 'm1'}), (b {uid: 'p1'}) CREATE (a)-[:KGQA_TOPIC]->(b)")
    assert prepare_store(store).relation_types == ["ABOUT", "DIRECTED BY", "LIKES", "STARRED"]


def test_prepare_rejects_ids_that_are_not_strings(tmp_path: Path) -> None:
    store = KgliteStore(tmp_path / "ints.kgl", mapping=GraphMapping.of(entity_label="Item"))
    store.graph.cypher("CREATE (:Item {id: 42, name: 'forty-two'})")
    with pytest.raises(ConfigError, match="holds int values") as info:
        prepare_store(store)
    assert "KGQA_STORE__ENTITY_ID_PROPERTY" in (info.value.hint or "")
