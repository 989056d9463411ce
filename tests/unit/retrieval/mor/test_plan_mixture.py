"""Mixing several plans' rankings by plan weight (MorRetriever.rank), against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from kgqa.retrieval.mor.reranker import plan_mixture


def test_one_plan_keeps_the_rerankers_order_as_log_softmax() -> None:
    scores = torch.tensor([2.0, 0.0, 1.0])
    mixed = plan_mixture([(["a", "b", "c"], scores, 0.3)])
    expected = torch.log_softmax(scores.double(), 0).tolist()
    assert [mixed[i] for i in "abc"] == pytest.approx(expected)
    assert sorted(mixed, key=lambda i: -mixed[i]) == ["a", "c", "b"]


def test_plans_are_weighted_and_a_node_reached_by_both_sums_its_shares() -> None:
    # plan 1 (weight 3): a, b equally likely; plan 2 (weight 1): b only
    mixed = plan_mixture([(["a", "b"], torch.tensor([0.0, 0.0]), 3.0), (["b"], torch.tensor([5.0]), 1.0)])
    assert math.exp(mixed["a"]) == pytest.approx(0.75 * 0.5)
    assert math.exp(mixed["b"]) == pytest.approx(0.75 * 0.5 + 0.25 * 1.0)
    assert sum(math.exp(v) for v in mixed.values()) == pytest.approx(1.0)


def test_a_heavier_plan_outranks_a_lighter_ones_confident_node() -> None:
    sure = torch.tensor([10.0, 0.0])  # the light plan is sure of "x"
    mixed = plan_mixture([(["y", "z"], torch.tensor([3.0, 0.0]), 0.9), (["x", "w"], sure, 0.1)])
    assert max(mixed, key=lambda i: mixed[i]) == "y"
