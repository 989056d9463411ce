"""Topic disambiguation: fits from the planner's raw plan scores and the best topic triple."""

from __future__ import annotations

import math

import pytest

from kgqa.retrieval.disambiguation import rank_topics
from kgqa.types import LinkedEntity


def _cands(*ids: str) -> list[LinkedEntity]:
    return [LinkedEntity(i, i, 0.95, "x", "exact") for i in ids]


def test_rank_topics_mixes_plan_share_and_best_triple_by_hand() -> None:
    # plan shares: softmax(0, ln 3) = (0.25, 0.75); fits: (0.25 + 0.9) / 2, (0.75 + 0.2) / 2
    result, order = rank_topics(_cands("a", "b"), [0.0, math.log(3.0)], [0.9, 0.2])
    assert order == [0, 1]
    assert [f.fit for f in result.ranked] == pytest.approx([0.575, 0.475])
    assert result.ranked[0].plan_share == pytest.approx(0.25)
    assert result.margin == pytest.approx(0.1)


def test_rank_topics_without_planner_uses_the_scorer_and_keeps_link_order_on_ties() -> None:
    result, order = rank_topics(_cands("a", "b", "c"), None, [0.3, 0.7, 0.7])
    assert order == [1, 2, 0]
    assert result.ranked[0].plan_share is None and result.margin == pytest.approx(0.0)


def test_rank_topics_gives_a_contender_without_plans_no_plan_share() -> None:
    result, order = rank_topics(_cands("a", "b"), [float("-inf"), 2.0], [0.5, 0.5])
    assert order == [1, 0] and result.ranked[1].plan_share == 0.0
    assert result.to_dict()["contenders"][0] == {
        "id": "b",
        "name": "b",
        "link_score": 0.95,
        "plan_share": 1.0,
        "best_triple": 0.5,
        "fit": 0.75,
    }
