"""MoR on a graph kgqa did not ingest (issue 29, "MoR on a mapped graph"): the tiny text-rich typed
graph of test_mor_e2e written in a user's own schema (another label, id/name/text/type
properties of other names), prepared and embedded in place, then read through the same mapping
by MoR's typed traversal, text matching and reranker, on the embedded store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingest.embedding import embed_store
from ingest.prepare import prepare_store
from ingest.prepare_plan import plan_prepare
from kgqa.retrieval.mor.traversal import TraversalSettings, Traverser, read_schema
from kgqa.store.kglite_store import KgliteStore
from tests.integration.test_mor_e2e import QUESTION, train_on_questions
from tests.mapped_graph import TYPED_MAPPING, write_typed_user_graph

USER_PROPERTIES = (
    "MATCH (n:`Bio Thing`) RETURN n.uid AS uid, n.title AS title, n.blurb AS blurb, n.kind AS kind"
)


def _user_graph(store: KgliteStore) -> None:
    write_typed_user_graph(lambda text, params: store.graph.cypher(text, params=params))


@pytest.fixture
def mapped_kg(tmp_path: Path, fake_embedder: Any) -> KgliteStore:
    store = KgliteStore(tmp_path / "user.kgl", mapping=TYPED_MAPPING)
    _user_graph(store)
    plan = plan_prepare(
        store, model_id=fake_embedder.model_id, dimension=fake_embedder.dimension, slice_cap=1000
    )
    assert any(ix.startswith("kgqa_entity_text: FULLTEXT :`Bio Thing`(blurb)") for ix in plan.indexes)
    prepare_store(store)
    embed_store(store, fake_embedder)
    return store


def test_the_schema_and_text_matches_are_read_through_the_mapping(
    mapped_kg: KgliteStore, fake_embedder: Any
) -> None:
    assert read_schema(mapped_kg).triples == {
        ("Disease", "DISEASE_PHENOTYPE_POSITIVE", "Phenotype"),
        ("Disease", "DISEASE_PROTEIN", "Gene"),
        ("Gene", "PHENOTYPE_PROTEIN", "Phenotype"),
        ("Phenotype", "PHENOTYPE_PHENOTYPE", "Phenotype"),
    }
    indexes = {r["name"] for r in mapped_kg.graph.cypher("SHOW INDEXES YIELD name RETURN name").to_list()}
    assert "kgqa_entity_text" in indexes and "entity_text" not in indexes
    traverser = Traverser(mapped_kg, fake_embedder, TraversalSettings())
    assert traverser.text_matches("increased volume of the earlobe", "Phenotype", 3)[0]["id"] == "HP:2"


def test_mor_trains_and_answers_on_the_users_graph_leaving_its_data(
    mapped_kg: KgliteStore, fake_embedder: Any, tmp_path: Path
) -> None:
    before = mapped_kg.graph.cypher(USER_PROPERTIES).to_list()
    retriever = train_on_questions(mapped_kg, fake_embedder, tmp_path)
    result = retriever.retrieve(QUESTION)
    assert str(result.plan).startswith("Disease*") and result.nodes[0].id == "D:2"
    assert result.nodes[0].trajectories[0].rels  # reached by typed traversal, not text alone
    genes = retriever.retrieve(QUESTION.replace("diseases present", "genes are associated"))
    assert genes.nodes[0].id == "G:2"
    assert mapped_kg.graph.cypher(USER_PROPERTIES).to_list() == before


def test_an_untyped_mapped_graph_gets_no_text_index(tmp_path: Path, fake_embedder: Any) -> None:
    """The text index serves MoR only: texts without types (no ``kind``) do not get it."""
    store = KgliteStore(tmp_path / "untyped.kgl", mapping=TYPED_MAPPING)
    _user_graph(store)
    store.graph.cypher("MATCH (n:`Bio Thing`) REMOVE n.kind")
    plan = plan_prepare(
        store, model_id=fake_embedder.model_id, dimension=fake_embedder.dimension, slice_cap=1000
    )
    assert not any(ix.startswith("kgqa_entity_text") for ix in plan.indexes)
    prepare_store(store)
    embed_store(store, fake_embedder)
    indexes = {r["name"] for r in store.graph.cypher("SHOW INDEXES YIELD name RETURN name").to_list()}
    assert "kgqa_entity_name" in indexes and "kgqa_entity_text" not in indexes
