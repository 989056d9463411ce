"""Misses by stage: each wrong first answer goes to the first stage that lost it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kgqa.eval.run import MISS_CAUSES, miss_cause, miss_shares


def _record(
    *, hit: float, linking: float = math.nan, recall: float = 1.0, plan: float = 1.0, plans: bool = True
) -> dict[str, Any]:
    return {
        "scores": {"hit_at_1": hit},
        "linking_top1": linking,
        "answer_recall": {100: recall},
        "plans": [{"steps": ["R->"], "probability": 1.0}] if plans else [],
        "plan_hit_at_1": plan,
    }


@pytest.mark.parametrize(
    ("record", "cause"),
    [
        (_record(hit=1.0, linking=0.0, recall=0.0, plan=0.0), None),
        (_record(hit=0.0, linking=0.0, recall=0.0, plan=0.0), "linking"),
        (_record(hit=0.0, linking=1.0, recall=0.0, plan=0.0), "retrieval"),
        (_record(hit=0.0, recall=0.5, plan=0.0), "plan"),
        (_record(hit=0.0, recall=0.5, plan=math.nan), "no_plan"),  # no plan reaches an answer
        (_record(hit=0.0, plan=1.0), "reader"),
        (_record(hit=0.0, plan=math.nan, plans=False), "reader"),  # no planner
    ],
)
def test_a_miss_goes_to_the_first_stage_that_lost_it(record: dict[str, Any], cause: str | None) -> None:
    assert miss_cause(record) == cause


def test_miss_shares_count_failed_questions_as_linking_misses() -> None:
    records = [_record(hit=1.0), _record(hit=0.0, plan=0.0), _record(hit=0.0)]
    # A record read back from a JSON log has string keys.
    records.append({**_record(hit=0.0, recall=0.0), "answer_recall": {"100": 0.0}})
    records.append(_record(hit=0.0, plan=math.nan))
    shares = miss_shares(records, failed=1)
    assert list(shares) == list(MISS_CAUSES)
    assert shares == pytest.approx(dict.fromkeys(MISS_CAUSES, 1 / 6))
    assert all(math.isnan(v) for v in miss_shares([], failed=0).values())
