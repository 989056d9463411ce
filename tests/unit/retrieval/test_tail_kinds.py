"""The kinds plain relation names give what they point at (``plays_in_club``: clubs), on 38 lines
of WorldCup2014's KB (``tests/fixtures/wc2014_mexico.tsv``: four players listed for Mexico, every
fact of theirs both ways round, their clubs' countries)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from kgqa.embed.protocol import Embedder
from kgqa.retrieval.graph.kinds import SchemaKinds, tail_kind
from kgqa.retrieval.models.answer_type import tail_kind_fit
from kgqa.retrieval.models.name_match import SHARPNESS
from kgqa.retrieval.retriever import Retrieval, Retriever
from kgqa.store.kglite_store import KgliteStore
from tests.conftest import FakeEmbedder
from tests.kb_excerpts import FIXTURES, load_excerpt

TEAM = "which professional football team do players from Mexico play for ?"


@pytest.mark.parametrize(
    ("relation", "kind"),
    [
        ("PLAYS_IN_CLUB", "club"),
        ("release_year", "year"),
        ("starred_actors", "actors"),
        ("place_of_birth", "place"),  # the noun before "of"
        ("spouse", "spouse"),
        ("directed_by", None),  # a preposition
        ("is_aged", None),  # a participle
        ("capital_of", None),  # London is the capital, the United Kingdom its tail
        ("plays_in_club_inverse", None),  # read backwards: it points at players
        ("of_kind_of_thing", "kind"),  # the inner "of", not a leading one
        ("was_of_kind", None),  # a verb before "of"
        ("location.country.capital", None),  # Freebase's names give their heads' kind
    ],
)
def test_a_plain_relation_name_gives_its_tails_kind_by_its_last_noun(relation: str, kind: str | None) -> None:
    assert tail_kind(relation) == kind


def test_schema_kinds_hold_head_and_tail_kinds_apart(fake_embedder: Embedder) -> None:
    kinds = SchemaKinds.of(["plays_in_club", "directed_by", "location.country.capital"], fake_embedder.embed)
    assert kinds is not None
    assert kinds.of_tail == {"plays_in_club": "club"}
    assert kinds.of_relation == {"location.country.capital": "country"}
    assert kinds.kinds == ["club", "country"]
    assert SchemaKinds.of(["directed_by", "born_in"], fake_embedder.embed) is None


def test_a_plan_loses_by_how_much_worse_its_ends_kinds_fit_than_the_best_end() -> None:
    # plan 0 ends at a club (0.4); plan 1 at a position (0.2) and a club; plan 2 at a player no
    # name points at and a position: the player is of an unknown kind and costs nothing
    fit = torch.tensor([0.4, 0.2, float("-inf")])
    end_plan, end_entity = torch.tensor([0, 1, 1, 2, 2]), torch.tensor([0, 1, 0, 2, 1])
    expected = torch.tensor([0.0, -0.1, -0.1])
    torch.testing.assert_close(tail_kind_fit(end_plan, end_entity, 3, fit), expected)
    nothing = torch.full((3,), float("-inf"))
    torch.testing.assert_close(tail_kind_fit(end_plan, end_entity, 3, nothing), torch.zeros(3))


@pytest.fixture(scope="module")
def mexico(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KgliteStore]:
    with KgliteStore(tmp_path_factory.mktemp("mexico") / "graph.kgl") as store:
        yield load_excerpt(store, FIXTURES / "wc2014_mexico.tsv", FakeEmbedder())


def _ask(store: KgliteStore, embedder: Embedder, tail_kind_weight: float, question: str = TEAM) -> Retrieval:
    return Retriever.train_free(store, embedder, tail_kind=tail_kind_weight).retrieve(
        question, topic_ids=["Mexico"]
    )


def test_the_tail_kinds_of_the_subgraphs_triples_weigh_the_plans(mexico: KgliteStore) -> None:
    embedder = FakeEmbedder()
    plain, kinded = _ask(mexico, embedder, 0.0), _ask(mexico, embedder, 1.0)
    assert plain.prepared.tail_kinds is None
    kinds = kinded.prepared.tail_kinds
    assert kinds is not None
    sub = kinded.prepared.subgraph
    players = [sub.entity_ids.index(p) for p in ["Enner_VALENCIA", "Egidio_AREVALO"]]
    kinded_ends = ["CF_Pachuca", "Forward", "Mexico"]  # tails of plays_in_club, plays_position, ...
    assert all(torch.isinf(kinds[players]))  # tails of *_inverse relations only
    assert all(torch.isfinite(kinds[[sub.entity_ids.index(e) for e in kinded_ends]]))
    assert plain.plans is not None and kinded.plans is not None
    plans = kinded.plans.plans
    fit = tail_kind_fit(plans.end_plan, plans.end_entity, plans.num_plans, kinds)
    torch.testing.assert_close(kinded.plans.logits, plain.plans.logits + SHARPNESS * fit)
    # "what kind of N": the answers are kinds of N, not things of it
    category = _ask(mexico, embedder, 1.0, "what kind of club do players from Mexico play for ?")
    assert category.prepared.answer_noun is not None and category.prepared.tail_kinds is None


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    from kgqa.config import EmbedderSettings
    from kgqa.embed import make_embedder

    return make_embedder(EmbedderSettings())


@pytest.fixture(scope="module")
def mexico_minilm(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[KgliteStore]:
    with KgliteStore(tmp_path_factory.mktemp("mexico_minilm") / "graph.kgl") as store:
        yield load_excerpt(store, FIXTURES / "wc2014_mexico.tsv", minilm)


def _rank(retrieval: Retrieval, last_step: str) -> int:
    """Where the best plan whose last step walks ``last_step`` forward stands among the plans."""
    assert retrieval.plans is not None
    ranked = retrieval.plans.plans
    relations = retrieval.prepared.subgraph.relation_types
    order = torch.argsort(retrieval.plans.logits, descending=True).tolist()
    for rank, plan in enumerate(order):
        steps = [s for s in ranked.steps[plan].tolist() if s >= 0]
        if steps[-1] % 2 == 0 and relations[steps[-1] // 2] == last_step:
            return rank
    raise AssertionError(f"no plan ends with {last_step}")


def test_a_team_asked_for_is_a_club_not_a_position(mexico_minilm: KgliteStore, minilm: Embedder) -> None:
    # "play" names plays_position best (0.67 against 0.54 for plays_in_club); "team" fits the
    # kind "club" (0.42) far better than "position" (0.26)
    plain, kinded = _ask(mexico_minilm, minilm, 0.0), _ask(mexico_minilm, minilm, 1.0)
    assert _rank(plain, "PLAYS_POSITION") < _rank(plain, "PLAYS_IN_CLUB")
    assert _rank(kinded, "PLAYS_IN_CLUB") < _rank(kinded, "PLAYS_POSITION")
    # a question asking for positions keeps them first
    position = _ask(mexico_minilm, minilm, 1.0, "which position do players from Mexico play ?")
    assert _rank(position, "PLAYS_POSITION") == 0
