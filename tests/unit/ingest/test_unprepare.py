"""``kgqa prepare --dry-run`` / ``kgqa unprepare`` and what guards a user's graph (issue 29 majors 7
and 8, issue 30 items 8 and 9), on the embedded store: prepare then unprepare leaves every count
of ``kgqa stats --json`` and every user property as before; saving a question touches no user
node unless asked; a changed mapping, a foreign embedding property and ``kgqa ingest`` on a
mapped graph are refused with the command that fixes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingest.embedding import embed_store
from ingest.pipeline import refuse_mapped_store
from ingest.prepare import prepare_store
from ingest.prepare_plan import plan_prepare
from ingest.unprepare import unprepare_store
from kgqa.errors import ConfigError
from kgqa.saved_questions import _save, load_saved
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.mapping import GraphMapping
from kgqa.store.stats import collect_stats
from tests.mapped_graph import MAPPING, USER_GRAPH

ALL_NODES = "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props ORDER BY n.uid, n.id"
ALL_RELS = "MATCH (a)-[r]->(b) RETURN type(r) AS type, count(*) AS n ORDER BY type"


def _raw(store: KgliteStore, text: str) -> list[dict[str, Any]]:
    return store.graph.cypher(text).to_list()


def _everything(store: KgliteStore) -> tuple[dict[str, Any], list[Any], list[Any]]:
    return collect_stats(store).to_dict(), _raw(store, ALL_NODES), _raw(store, ALL_RELS)


@pytest.fixture
def user_store(tmp_path: Path) -> KgliteStore:
    store = KgliteStore(tmp_path / "user.kgl", mapping=MAPPING)
    store.graph.cypher(USER_GRAPH)
    return store


def _save_one(store: KgliteStore, qid: str, *, link: bool) -> None:
    _save(
        store,
        qid,
        "who directed the matrix",
        answers=["p1"],
        evidence=[("m1", "DIRECTED BY", "p1")],
        topic_ids=["m1"],
        answer_ids=["p1"],
        link_entities=link,
    )


def test_prepare_then_unprepare_leaves_stats_and_user_properties_as_before(
    user_store: KgliteStore, fake_embedder: Any
) -> None:
    before = _everything(user_store)

    prepare_store(user_store, slice_cap=1)  # every entity with two facts becomes a sliced hub
    embed_store(user_store, fake_embedder)
    _save_one(user_store, "q-1", link=True)
    assert _everything(user_store) != before
    assert _raw(user_store, "MATCH (n {uid: 'm1'}) RETURN n.kgqa_slice_cap AS cap") == [{"cap": 1}]

    report = unprepare_store(user_store, page_size=2)  # several pages

    # 5 counted: kglite keeps its two vector indexes itself and reports no counter for their drop
    assert report.entity_label == "Film Thing" and report.schema_dropped >= 5
    assert report.nodes_deleted == 2 + 1 + 1  # two relation types, the question, the meta node
    assert report.relationships_deleted == 2  # KGQA_TOPIC, KGQA_ANSWER
    assert _everything(user_store) == before
    assert unprepare_store(user_store).properties_removed == 0  # nothing left: a re-run is a no-op


def test_unprepare_resumes_after_an_interruption(user_store: KgliteStore, fake_embedder: Any) -> None:
    before = _everything(user_store)
    prepare_store(user_store)
    embed_store(user_store, fake_embedder)

    class Interrupted(Exception):
        pass

    write, calls = user_store.write, []

    def dies_on_the_third_page(statements):  # type: ignore[no-untyped-def]
        calls.append(statements[0].query.name)
        if len(calls) == 3:
            raise Interrupted
        return write(statements)

    user_store.write = dies_on_the_third_page  # type: ignore[method-assign]
    with pytest.raises(Interrupted):
        unprepare_store(user_store, page_size=1)
    user_store.write = write  # type: ignore[method-assign]
    unprepare_store(user_store, page_size=1)
    assert _everything(user_store) == before


def test_saving_a_question_writes_no_relationship_to_user_nodes_unless_asked(
    user_store: KgliteStore,
) -> None:
    prepare_store(user_store)
    rels = _raw(user_store, ALL_RELS)
    _save_one(user_store, "q-plain", link=False)
    assert _raw(user_store, ALL_RELS) == rels  # the question is a node of its own
    assert load_saved(user_store, "q-plain").evidence == (("m1", "DIRECTED BY", "p1"),)
    [drawn] = user_store.run(queries.get("question_browser"), {"id": "q-plain"})
    assert {e["properties"]["uid"] for e in drawn["entities"]} == {"m1", "p1"}  # topics drawn anyway
    _save_one(user_store, "q-linked", link=True)
    linked = {r["type"]: r["n"] for r in _raw(user_store, ALL_RELS)}
    assert linked["KGQA_TOPIC"] == 1 and linked["KGQA_ANSWER"] == 1


def test_dry_run_writes_nothing_and_says_what_where_and_which_privileges(user_store: KgliteStore) -> None:
    before = _everything(user_store)
    plan = plan_prepare(user_store, model_id="fake-hash-16", dimension=384, slice_cap=1)
    assert _everything(user_store) == before
    data = plan.to_dict()
    assert (data["entities"], data["keyed_entities"], data["fact_types"]) == (
        4,
        4,
        ["DIRECTED BY", "STARRED"],
    )
    writes = {w["what"]: w for w in data["writes"]}
    assert writes["kgqa_name_norm"]["count"] == 4
    assert writes["kgqa_embedding"]["bytes"] == 4 * (384 * 4 + 16)
    assert writes["kgqa_slice_* (hub slices)"]["count"] == 2
    assert data["bytes_per_million_entities"] > 1_500_000_000  # 384 float32s per entity dominate
    assert any("kgqa_entity_name: FULLTEXT :`Film Thing`(title)" in ix for ix in data["indexes"])
    text = " ".join(data["privileges"])
    assert "CREATE NEW PROPERTY NAME" in text and "INDEX MANAGEMENT" in text and "`kgqa_name_norm`" in text
    assert "kgqa unprepare" in plan.render()


def _index_names(store: KgliteStore) -> set[str]:
    return {r["name"] for r in _raw(store, "SHOW INDEXES YIELD name RETURN name")}


def test_a_users_fulltext_index_on_the_name_is_found_by_schema_and_reused(
    user_store: KgliteStore, fake_embedder: Any
) -> None:
    """Major 3 on the embedded store: kglite, like Neo4j, skips kgqa's CREATE ... IF NOT EXISTS when
    an index of the same schema exists; the dry run says it is reused, the kernels query it by the
    user's name, and unprepare leaves it."""
    _raw(user_store, "CREATE FULLTEXT INDEX user_titles FOR (n:`Film Thing`) ON EACH [n.title]")
    plan = plan_prepare(user_store, model_id="fake-hash-16", dimension=16, slice_cap=1000)
    [name_index] = [ix for ix in plan.indexes if ix.startswith("kgqa_entity_name:")]
    assert "reused: your index 'user_titles'" in name_index
    assert not any("reused" in ix for ix in plan.indexes if not ix.startswith("kgqa_entity_name:"))

    prepare_store(user_store)
    embed_store(user_store, fake_embedder)
    assert "user_titles" in _index_names(user_store) and "kgqa_entity_name" not in _index_names(user_store)
    rows = user_store.run(queries.get("link_fulltext"), {"query": "speed", "limit": 5})
    assert [r["id"] for r in rows] == ["m2"]
    fuzzy = user_store.run(queries.get("link_fulltext"), {"query": "sped~1", "limit": 5})
    assert [r["id"] for r in fuzzy] == ["m2"]  # the in-process fuzzy index reads the user's one too

    unprepare_store(user_store)
    assert _index_names(user_store) == {"user_titles"}


def test_without_a_users_index_kgqa_creates_and_queries_its_own(
    user_store: KgliteStore, fake_embedder: Any
) -> None:
    prepare_store(user_store)
    embed_store(user_store, fake_embedder)
    assert "kgqa_entity_name" in _index_names(user_store)
    assert [
        r["id"] for r in user_store.run(queries.get("link_fulltext"), {"query": "speed", "limit": 5})
    ] == ["m2"]


def test_a_second_prepare_with_another_mapping_is_refused_then_redone(
    user_store: KgliteStore, fake_embedder: Any
) -> None:
    prepare_store(user_store)
    embed_store(user_store, fake_embedder)
    narrower = GraphMapping.of(
        entity_label="Film Thing",
        id_property="uid",
        name_property="blurb",
        text_property="blurb",
        fact_types=("STARRED",),
    )
    user_store.mapping = narrower
    with pytest.raises(ConfigError, match="prepared for another schema mapping") as info:
        prepare_store(user_store)
    assert "store.entity_name_property: 'title' -> 'blurb'" in str(info.value)
    assert "kgqa prepare --redo" in (info.value.hint or "")
    with pytest.raises(ConfigError, match="another schema mapping"):
        embed_store(user_store, fake_embedder)

    report = prepare_store(user_store, redo=True)

    assert report.redone_from is not None and report.relation_types == ["STARRED"]
    assert report.names_normalised == 1  # only m1 has a blurb
    norms = _raw(
        user_store, "MATCH (n:`Film Thing`) RETURN n.uid AS id, n.kgqa_name_norm AS norm ORDER BY id"
    )
    assert {r["id"]: r["norm"] for r in norms}["m1"] == "film about a simulation"
    assert [r["name"] for r in user_store.run(queries.get("relation_types_list"))] == ["STARRED"]
    assert embed_store(user_store, fake_embedder).entities_embedded == 4  # the old vectors went


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("'a string'", "values that are not vectors"),
        ("[1.0, 2.0]", "2-dimensional vectors kgqa did not write"),
    ],
)
def test_an_embedding_property_holding_foreign_values_is_refused(
    tmp_path: Path, fake_embedder: Any, value: str, match: str
) -> None:
    mapping = GraphMapping.of(entity_label="Film Thing", id_property="uid", embedding_property="vec")
    store = KgliteStore(tmp_path / "vec.kgl", mapping=mapping)
    store.graph.cypher(USER_GRAPH)
    store.graph.cypher(f"MATCH (n {{uid: 'm2'}}) SET n.vec = {value}")
    with pytest.raises(ConfigError, match=match) as info:
        embed_store(store, fake_embedder)
    assert "'vec'" in str(info.value) and "KGQA_STORE__ENTITY_EMBEDDING_PROPERTY" in (info.value.hint or "")
    assert _raw(store, "MATCH (n {uid: 'm2'}) RETURN n.vec AS v")[0]["v"] is not None  # untouched


def test_ingest_is_refused_on_a_mapped_store(user_store: KgliteStore, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="kgqa ingest writes kgqa's own graph model"):
        refuse_mapped_store(user_store)
    prepare_store(user_store)
    user_store.mapping = GraphMapping()  # the mapping configured away: the recorded one still counts
    with pytest.raises(ConfigError, match="Film Thing"):
        refuse_mapped_store(user_store)


def test_unprepare_refuses_kgqa_own_graph(toy_kg: KgliteStore) -> None:
    with pytest.raises(ConfigError, match="nothing to unprepare"):
        unprepare_store(toy_kg)
