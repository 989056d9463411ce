"""KGQA and retrieval metrics: the one metrics module, its values pinned by tests.

Answer metrics follow SubgraphRAG's evaluator (App. C): answers are normalised (lower-case, no
punctuation, no articles, collapsed whitespace; underscores read as spaces), then compared by
**exact equality of the normalised strings** (no substring matching). Per question:

- Hit: some predicted answer equals a gold answer; Hit@1: the first predicted answer does.
- precision / recall / F1 over the *sets* of normalised answers (duplicates count once).

Over a data set, Macro-F1 is the mean per-question F1 and Micro-F1 is computed from the summed
true positives, predicted and gold counts, so questions with many answers weigh more.

Retrieval recall compares ids (entity ids, (head, relation, tail) triples) exactly, without
normalisation. All metrics are fractions in [0, 1] (multiply by 100 for tables).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import numpy as np

from kgqa.names import normalize_answer

DEFAULT_KS: tuple[int, ...] = (25, 50, 100, 200)


T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True, slots=True)
class QAScores:
    """Answer scores of one question; all rates in [0, 1].

    Attributes:
        hit: 1.0 if any predicted answer matches a gold answer, else 0.0.
        hit_at_1: 1.0 if the first predicted answer matches, else 0.0.
        precision: tp / n_pred (0 when nothing was predicted).
        recall: tp / n_gold (0 when there is no gold answer).
        f1: harmonic mean of precision and recall (0 when both are 0).
        tp: distinct normalised predictions that are gold answers.
        n_pred: distinct non-empty normalised predictions.
        n_gold: distinct non-empty normalised gold answers.
    """

    hit: float
    hit_at_1: float
    precision: float
    recall: float
    f1: float
    tp: int
    n_pred: int
    n_gold: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _normalized_unique(answers: Iterable[str]) -> list[str]:
    """Normalised answers in first-seen order, duplicates and empty strings dropped."""
    out = dict.fromkeys(n for n in map(normalize_answer, answers) if n)
    return list(out)


def score_answers(predicted: Sequence[str], gold: Sequence[str]) -> QAScores:
    """Score one question's ranked predictions against its gold answers.

    Args:
        predicted: predicted answers, best first (may be empty: the reader abstained).
        gold: gold answers.

    Returns:
        The per-question :class:`QAScores`; all zeros when nothing was predicted. Answers that
        normalise to the empty string (e.g. ``"the"``) are ignored on both sides.
    """
    pred = _normalized_unique(predicted)
    gold_set = set(_normalized_unique(gold))
    tp = sum(p in gold_set for p in pred)
    precision = tp / len(pred) if pred else 0.0
    recall = tp / len(gold_set) if gold_set else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return QAScores(
        hit=float(tp > 0),
        hit_at_1=float(bool(pred) and pred[0] in gold_set),
        precision=precision,
        recall=recall,
        f1=f1,
        tp=tp,
        n_pred=len(pred),
        n_gold=len(gold_set),
    )


def aggregate(scores: Sequence[QAScores]) -> dict[str, float]:
    """Data-set answer metrics.

    Returns:
        ``hit``, ``hit_at_1``, ``macro_f1`` (means over questions), ``micro_f1`` =
        2·ΣTP / (Σn_pred + Σn_gold) (the F1 of micro precision ΣTP/Σn_pred and micro recall
        ΣTP/Σn_gold) and ``n`` (number of questions). Rates are nan when ``scores`` is empty;
        ``micro_f1`` is 0 when nothing was predicted and there is no gold answer at all.
    """
    n = len(scores)
    if n == 0:
        return {"hit": math.nan, "hit_at_1": math.nan, "macro_f1": math.nan, "micro_f1": math.nan, "n": 0}
    tp = sum(s.tp for s in scores)
    denom = sum(s.n_pred for s in scores) + sum(s.n_gold for s in scores)
    return {
        "hit": sum(s.hit for s in scores) / n,
        "hit_at_1": sum(s.hit_at_1 for s in scores) / n,
        "macro_f1": sum(s.f1 for s in scores) / n,
        "micro_f1": 2 * tp / denom if denom else 0.0,
        "n": n,
    }


# --------------------------------------------------------------------------- grounding (Score_h)


def grounding_score(
    predicted: Sequence[tuple[str, bool]], gold: Sequence[str], *, answer_in_kg: bool
) -> float:
    """One question's Score_h term s_i / a_i (SubgraphRAG App. C).

    Where the gold answer is in the KG each answer scores +1 if correct and -1 if wrong, and no
    answer scores 0. Where it is not, no answer scores +1 (the right refusal), an answer naming
    a retrieved entity -1 and one naming no retrieved entity (a hallucination) -1.5. The sum is
    divided by the number of answers, so the term lies in [-1, 1] or [-1.5, 1].

    Args:
        predicted: (answer, grounded) pairs, grounded = the answer names a retrieved entity.
        gold: gold answers.
        answer_in_kg: whether some gold answer entity exists in the KG.
    """
    answers = [(a, g) for a, g in dict.fromkeys(predicted) if normalize_answer(a)]
    if not answers:
        return 0.0 if answer_in_kg else 1.0
    if answer_in_kg:
        gold_set = set(_normalized_unique(gold))
        total = sum(1.0 if normalize_answer(a) in gold_set else -1.0 for a, _ in answers)
    else:
        total = sum(-1.0 if grounded else -1.5 for _, grounded in answers)
    return total / len(answers)


def score_h(terms: Sequence[float], *, any_answer_missing_from_kg: bool) -> float:
    """Mean of :func:`grounding_score` terms, min-max normalised to 0-100.

    The minimum is the lowest possible term: -1.5 when some question's answer is missing from
    the KG, else -1; the maximum is 1. nan for no questions.
    """
    if not terms:
        return math.nan
    low = -1.5 if any_answer_missing_from_kg else -1.0
    return 100 * (sum(terms) / len(terms) - low) / (1 - low)


# --------------------------------------------------------------------------- retrieval


def recall_at_ks(ranked: Sequence[T], gold: Collection[T], ks: Iterable[int]) -> dict[int, float]:
    """Fraction of distinct gold items found within the top k of ``ranked``, for each k.

    Items are compared exactly (entity ids, triple indices, (head, relation, tail) tuples: a
    reversed triple is a different triple). nan for every k when ``gold`` is empty.
    """
    ks = tuple(ks)
    bad = [k for k in ks if k < 1]
    if bad:
        raise ValueError(f"k must be >= 1, got {bad}")
    gold_set = set(gold)
    if not gold_set:
        return {k: math.nan for k in ks}
    first_rank: dict[T, int] = {}
    for i, item in enumerate(ranked):
        if item in gold_set and item not in first_rank:
            first_rank[item] = i
    ranks = sorted(first_rank.values())
    return {k: sum(r < k for r in ranks) / len(gold_set) for k in ks}


def mean_recall(per_question: Sequence[Mapping[int, float]]) -> dict[int, float]:
    """Average per-question recall@k dicts, skipping nan (questions without gold); nan if none left."""
    ks = sorted({k for d in per_question for k in d})
    out: dict[int, float] = {}
    for k in ks:
        vals = [d[k] for d in per_question if k in d and not math.isnan(d[k])]
        out[k] = sum(vals) / len(vals) if vals else math.nan
    return out


# --------------------------------------------------------------------------- STaRK


@dataclass(frozen=True, slots=True)
class StarkScores:
    """STaRK's ranking metrics of one question (gold node ids against a ranked id list), in [0, 1].

    Attributes:
        hit_at_1: 1.0 if the first ranked node is gold.
        hit_at_5: 1.0 if a gold node is among the first five.
        recall_at_20: share of the distinct gold nodes among the first twenty.
        mrr: 1 / rank of the first gold node (1-based), 0 when none is ranked.
    """

    hit_at_1: float
    hit_at_5: float
    recall_at_20: float
    mrr: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def stark_scores(ranked: Sequence[str], gold: Collection[str]) -> StarkScores:
    """Score one ranked list of node ids as STaRK does (ids compared exactly, duplicates once).

    Raises:
        ValueError: ``gold`` is empty (STaRK questions always have answers).
    """
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("a STaRK question needs at least one gold node id")
    ranked = list(dict.fromkeys(ranked))
    first = next((i for i, node in enumerate(ranked) if node in gold_set), None)
    return StarkScores(
        hit_at_1=float(first == 0),
        hit_at_5=float(first is not None and first < 5),
        recall_at_20=len(gold_set.intersection(ranked[:20])) / len(gold_set),
        mrr=0.0 if first is None else 1.0 / (first + 1),
    )


def mean_stark(scores: Sequence[StarkScores]) -> dict[str, float]:
    """Mean of each STaRK metric over questions (nan for every metric when there are none)."""
    fields = ("hit_at_1", "hit_at_5", "recall_at_20", "mrr")
    if not scores:
        return dict.fromkeys(fields, math.nan)
    return {f: sum(getattr(s, f) for s in scores) / len(scores) for f in fields}


# --------------------------------------------------------------------------- latency


def latency_summary(ms: Sequence[float]) -> dict[str, float]:
    """Mean, median and 95th percentile (numpy, linear interpolation) of latencies in ms.

    Returns:
        ``{"mean", "p50", "p95", "n"}``; the rates are nan when ``ms`` is empty.
    """
    if len(ms) == 0:
        return {"mean": math.nan, "p50": math.nan, "p95": math.nan, "n": 0}
    arr = np.asarray(ms, dtype=np.float64)
    p50, p95 = np.percentile(arr, [50, 95], method="linear")
    return {"mean": float(arr.mean()), "p50": float(p50), "p95": float(p95), "n": len(ms)}
