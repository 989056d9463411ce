"""Metrics pinned on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from kgqa.eval.metrics import (
    QAScores,
    aggregate,
    latency_summary,
    mean_recall,
    normalize_answer,
    recall_at_ks,
    score_answers,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Lord of the Rings", "lord of rings"),
        ("  U.S.  Army ", "us army"),
        ("united_kingdom", "united kingdom"),
        ("A Beautiful Mind!", "beautiful mind"),
        ("Theatre", "theatre"),  # "the" inside a word stays
        ("the", ""),
    ],
)
def test_normalize_answer_strips_case_punctuation_articles(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_score_answers_matches_hand_computed_partial_match() -> None:
    s = score_answers(["The Lord of the Rings", "X"], ["lord of the rings", "Y", "Z"])
    assert (s.tp, s.n_pred, s.n_gold) == (1, 2, 3)
    assert s.hit == 1.0 and s.hit_at_1 == 1.0
    assert s.precision == pytest.approx(0.5)
    assert s.recall == pytest.approx(1 / 3)
    assert s.f1 == pytest.approx(0.4)  # 2 * (1/2) * (1/3) / (1/2 + 1/3)


def test_score_answers_hit_at_1_is_zero_when_first_prediction_wrong() -> None:
    s = score_answers(["X", "Tom_Hanks"], ["tom hanks"])
    assert (s.hit, s.hit_at_1) == (1.0, 0.0)
    assert (s.precision, s.recall) == (0.5, 1.0)
    assert s.f1 == pytest.approx(2 / 3)


def test_score_answers_gives_zeros_when_nothing_predicted() -> None:
    assert score_answers([], ["a b"]) == QAScores(0.0, 0.0, 0.0, 0.0, 0.0, tp=0, n_pred=0, n_gold=1)


def test_score_answers_counts_duplicate_predictions_once() -> None:
    s = score_answers(["Paris", "paris.", "PARIS", "Lyon"], ["Paris"])
    assert (s.tp, s.n_pred, s.n_gold) == (1, 2, 1)
    assert (s.precision, s.recall) == (0.5, 1.0)


def test_aggregate_computes_macro_and_micro_f1_by_hand() -> None:
    # q1: tp 1, pred 2, gold 3 -> F1 0.4.  q2: tp 2, pred 2, gold 2 -> F1 1.0.
    q1 = score_answers(["The Lord of the Rings", "X"], ["lord of the rings", "Y", "Z"])
    q2 = score_answers(["x", "y"], ["Y", "X"])
    agg = aggregate([q1, q2])
    assert agg["n"] == 2
    assert agg["hit"] == 1.0
    assert agg["hit_at_1"] == 1.0
    assert agg["macro_f1"] == pytest.approx((0.4 + 1.0) / 2)  # 0.7
    # micro: P = 3/4, R = 3/5, F1 = 2 * 3 / (4 + 5) = 2/3
    assert agg["micro_f1"] == pytest.approx(2 / 3)


def test_aggregate_weighs_abstentions_in_hit_and_micro_f1() -> None:
    agg = aggregate([score_answers(["x"], ["x"]), score_answers([], ["y", "z"])])
    assert agg["hit"] == 0.5 and agg["hit_at_1"] == 0.5 and agg["macro_f1"] == 0.5
    assert agg["micro_f1"] == pytest.approx(2 * 1 / (1 + 3))


def test_aggregate_returns_nan_when_empty() -> None:
    agg = aggregate([])
    assert agg["n"] == 0 and math.isnan(agg["macro_f1"])


def test_recall_at_k_counts_gold_in_top_k() -> None:
    ranked = ["a", "b", "c", "a", "d"]
    assert recall_at_ks(ranked, {"a", "d", "z"}, (2,))[2] == pytest.approx(1 / 3)
    assert recall_at_ks(ranked, {"a", "d", "z"}, (5,))[5] == pytest.approx(2 / 3)
    assert recall_at_ks(ranked, {"a", "d", "z"}, (100,))[100] == pytest.approx(2 / 3)


def test_recall_at_k_is_nan_when_gold_empty() -> None:
    assert math.isnan(recall_at_ks(["a"], set(), (10,))[10])


def test_recall_at_k_rejects_non_positive_k() -> None:
    with pytest.raises(ValueError, match="k must be"):
        recall_at_ks(["a"], {"a"}, (0,))


def test_answer_recall_at_ks_reports_each_cutoff() -> None:
    ranked = [f"e{i}" for i in range(300)]
    gold = ["e10", "e30", "e60", "e150", "e999"]
    assert recall_at_ks(ranked, gold, (25, 50, 100, 200)) == {25: 0.2, 50: 0.4, 100: 0.6, 200: 0.8}


def test_triple_recall_at_ks_requires_exact_direction() -> None:
    ranked = [("a", "r", "b"), ("c", "r", "b"), ("x", "r", "y")]
    gold = {("a", "r", "b"), ("b", "r", "c")}  # the second is only retrieved reversed
    assert recall_at_ks(ranked, gold, (1, 3)) == {1: 0.5, 3: 0.5}


def test_mean_recall_skips_questions_without_gold() -> None:
    per_q = [{25: 1.0, 50: 1.0}, {25: math.nan, 50: math.nan}, {25: 0.0, 50: 0.5}]
    assert mean_recall(per_q) == {25: 0.5, 50: 0.75}


def test_latency_summary_uses_linear_percentiles() -> None:
    s = latency_summary([10.0, 20.0, 30.0, 40.0, 100.0])
    assert s["n"] == 5
    assert s["mean"] == pytest.approx(40.0)
    assert s["p50"] == pytest.approx(30.0)
    # rank 0.95 * 4 = 3.8 -> 40 + 0.8 * (100 - 40) = 88
    assert s["p95"] == pytest.approx(88.0)


def test_latency_summary_is_nan_when_empty() -> None:
    s = latency_summary([])
    assert s["n"] == 0 and math.isnan(s["p95"])


def test_score_answers_ignores_answers_that_normalise_to_empty() -> None:
    s = score_answers(["The", "Jaws"], ["jaws", "an"])
    assert (s.tp, s.n_pred, s.n_gold) == (1, 1, 1)
    assert s.hit_at_1 == 1.0


def test_stark_scores_match_hand_computed_ranks() -> None:
    from kgqa.eval.metrics import StarkScores, stark_scores

    ranked = ["x", "y", "a", "z", "b"] + [f"n{i}" for i in range(20)] + ["c"]
    s = stark_scores(ranked, {"a", "b", "c"})
    assert (s.hit_at_1, s.hit_at_5) == (0.0, 1.0)
    assert (s.recall_at_20, s.mrr) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert stark_scores(["a", "a", "b"], ["b"]).mrr == pytest.approx(0.5)  # a duplicate ranks once
    assert stark_scores([], ["a"]) == StarkScores(0.0, 0.0, 0.0, 0.0)


def test_mean_stark_averages_each_metric() -> None:
    from kgqa.eval.metrics import mean_stark, stark_scores

    means = mean_stark([stark_scores(["a"], ["a"]), stark_scores(["x", "a"], ["a", "b"])])
    assert means == pytest.approx({"hit_at_1": 0.5, "hit_at_5": 1.0, "recall_at_20": 0.75, "mrr": 0.75})
    assert all(math.isnan(v) for v in mean_stark([]).values())
