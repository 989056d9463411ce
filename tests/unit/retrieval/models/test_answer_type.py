from __future__ import annotations

import pytest
import torch

from kgqa.retrieval.models.answer_type import answer_noun, answer_type_fit


@pytest.mark.parametrize(
    ("question", "mentions", "noun"),
    [
        ("what country did buddha come from?", ["buddha"], "country"),
        ("Which films did Stephen Gaghan direct", ["Stephen Gaghan"], "films"),
        ("what language do maltese speak?", ["maltese"], "language"),
        ("what kind of music did franz liszt compose?", ["franz liszt"], "music"),
        ("what type of religions are in the united states?", ["united states"], "religions"),
        ("which England footballer plays at position Forward ?", ["England", "Forward"], "footballer"),
        ("which Alan_PULIDO club is in Mexico ?", ["Alan_PULIDO", "Mexico"], "club"),
        ("what 5 countries border switzerland?", ["switzerland"], "countries"),
        ("which professional football team has a player from Peru ?", ["Peru"], "professional football team"),
        ("what political party does obama belong to", ["obama"], "political party"),
        ("what art movement picasso was in", ["picasso"], "art"),  # no auxiliary before the mention
        ("who directed cast away", ["cast away"], None),
        ("what is the capital of spain", ["spain"], None),
        ("what does google now do?", ["google now"], None),
        ("where is the football club that Alan_PULIDO plays for ?", ["Alan_PULIDO"], None),
    ],
)
def test_answer_noun_is_the_noun_after_what_or_which(
    question: str, mentions: list[str], noun: str | None
) -> None:
    assert answer_noun(question, mentions) == noun


def test_answer_type_fit_is_each_plans_mean_end_cosine_less_the_plans_mean() -> None:
    entities = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [0.0, 0.0]])  # e3 is nameless
    # plan 0 ends at e0 and e1, plan 1 at e2, plan 2 at the nameless e3 only
    end_plan, end_entity = torch.tensor([0, 0, 1, 2]), torch.tensor([0, 1, 2, 3])
    named = torch.tensor([True, True, True, False])
    fit = answer_type_fit(end_plan, end_entity, 3, torch.tensor([3.0, 0.0]), entities, named)
    means = torch.tensor([0.5, 2**-0.5])  # cosines: e0 1, e1 0, e2 1/sqrt(2)
    assert torch.allclose(fit[:2], means - means.mean())
    assert fit[2] == 0  # nothing to compare: neither lifted nor lowered
    assert fit[1] > fit[0]


def test_answer_type_fit_is_zero_where_no_end_has_a_name() -> None:
    nameless = torch.tensor([False])
    fit = answer_type_fit(
        torch.tensor([0, 1]), torch.tensor([0, 0]), 2, torch.ones(2), torch.zeros(1, 2), nameless
    )
    assert fit.tolist() == [0.0, 0.0]


def test_a_nameless_end_with_a_vector_of_its_mid_earns_nothing() -> None:
    # e1 is a CVT whose mid was embedded: its vector says nothing of the answers' kind.
    entities = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    named = torch.tensor([True, False, True])
    end_plan, end_entity = torch.tensor([0, 1, 2]), torch.tensor([0, 1, 2])
    fit = answer_type_fit(end_plan, end_entity, 3, torch.tensor([1.0, 0.0]), entities, named)
    assert fit[1] == 0
    assert torch.allclose(fit[[0, 2]], torch.tensor([0.5, -0.5]))
