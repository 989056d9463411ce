"""The answers' kind read from the graph's schema (Freebase's ``domain.type.property`` names), on
19 lines of the WebQSP-evidence KB: Gautama Buddha's place of birth (Kapilavastu, which heads
``location.location.*`` facts) and nationality (Nepal, which heads a ``location.country.*`` one)."""

from __future__ import annotations

import pytest
import torch

from kgqa.embed.protocol import Embedder
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.kinds import heads_of_types
from kgqa.retrieval.models.answer_type import answer_kind_fit
from kgqa.retrieval.models.name_match import SHARPNESS
from kgqa.retrieval.retriever import Retriever
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore
from tests.kb_excerpts import FIXTURES, load_excerpt

QUESTION = "what country did [Gautama Buddha] come from?"


@pytest.fixture
def buddha(kglite_store: KgliteStore, fake_embedder: Embedder) -> KgliteStore:
    return load_excerpt(kglite_store, FIXTURES / "webqsp_evidence_buddha.tsv", fake_embedder)


def _retriever(store: KgliteStore, embedder: Embedder, answer_kind: float) -> Retriever:
    # Nepal has 17 facts: above a degree cap of 10 the subgraph does not expand it, as it does
    # not expand the countries of the whole KB, so its kind must come from the store.
    subgraph = SubgraphSettings(hops=2, max_degree=10)
    return Retriever.train_free(store, embedder, subgraph=subgraph, answer_kind=answer_kind)


def test_a_hubs_kind_is_read_from_the_store_and_the_plan_ending_there_gains(
    buddha: KgliteStore, fake_embedder: Embedder
) -> None:
    plain = _retriever(buddha, fake_embedder, 0.0).retrieve(QUESTION)
    kinded = _retriever(buddha, fake_embedder, 0.5).retrieve(QUESTION)
    assert plain.prepared.answer_kinds is None
    kinds = kinded.prepared.answer_kinds
    assert kinds is not None
    sub = kinded.prepared.subgraph
    nepal, kapilavastu = sub.entity_ids.index("Nepal"), sub.entity_ids.index("Kapilavastu")
    # Nepal heads no triple of the subgraph; the store says it heads a location.country.* fact
    assert not bool((sub.head == nepal).any())
    assert float(kinds[nepal]) == pytest.approx(1.0)  # "country" is its kind, word for word
    assert float(kinds[kapilavastu]) < 0.9  # a "location"
    assert plain.plans is not None and kinded.plans is not None
    plans = kinded.plans.plans
    fit = answer_kind_fit(plans.end_plan, plans.end_entity, plans.num_plans, kinds)
    torch.testing.assert_close(kinded.plans.logits, plain.plans.logits + 0.5 * SHARPNESS * fit)
    assert float(fit[int(plans.end_plan[plans.end_entity == nepal][0])]) > 0  # a plan ending at Nepal


def test_a_category_asked_for_and_a_graph_without_dotted_names_get_no_kinds(
    buddha: KgliteStore, fake_embedder: Embedder, trained: Retriever
) -> None:
    retriever = _retriever(buddha, fake_embedder, 0.5)
    # "what type of X": the kinds of X are asked, not things that are an X
    category = retriever.retrieve("what type of country did [Gautama Buddha] come from?")
    assert category.prepared.answer_noun is not None and category.prepared.answer_kinds is None
    trained.answer_kind = 0.5
    try:  # MetaQA's relation names (directed_by) say nothing of their heads' kind
        assert trained.retrieve("which films did [Tom Hanks] star in").prepared.answer_kinds is None
    finally:
        trained.answer_kind = 0.0


def test_heads_of_types_reads_only_the_types_asked_and_skips_hubs(buddha: KgliteStore) -> None:
    asked = {"LOCATION.COUNTRY.FORM_OF_GOVERNMENT", "LOCATION.LOCATION.CONTAINEDBY"}
    found = heads_of_types(buddha, ["Nepal", "Kapilavastu", "Gautama Buddha", "nobody"], asked)
    assert sorted(found) == [
        ("Kapilavastu", "LOCATION.LOCATION.CONTAINEDBY"),
        ("Nepal", "LOCATION.COUNTRY.FORM_OF_GOVERNMENT"),
    ]
    assert heads_of_types(buddha, [], asked) == []
    # the kernel reads no entity above its degree cap: Nepal has 17 relationships
    capped = {"ids": ["Nepal"], "types": sorted(asked), "max_degree": 16}
    assert buddha.run(queries.get("entities_head_types"), capped) == []
