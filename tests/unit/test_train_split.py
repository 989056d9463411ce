"""Question splits and per-question hop counts used by `kgqa train` and `kgqa eval --heldout`."""

from __future__ import annotations

from kgqa.eval.splits import SplitSettings, hops_for
from kgqa.types import QAExample


def _q(i: int, **kw: object) -> QAExample:
    return QAExample(qid=f"f:{i}", question="q", topic_ids=("a",), answers=("b",), line=i, **kw)  # type: ignore[arg-type]


def test_split_parts_are_disjoint_complete_and_stable() -> None:
    examples = [_q(i) for i in range(2000)]
    parts = SplitSettings(heldout_fraction=0.2, val_fraction=0.1, seed=0).parts(examples)
    ids = {k: {e.qid for e in v} for k, v in parts.items()}
    assert ids["train"].isdisjoint(ids["val"]) and ids["train"].isdisjoint(ids["heldout"])
    assert ids["val"].isdisjoint(ids["heldout"])
    assert sum(len(v) for v in ids.values()) == 2000
    assert 0.16 < len(ids["heldout"]) / 2000 < 0.24 and 0.07 < len(ids["val"]) / 2000 < 0.13
    # stable when the file grows or is reordered: the held-out part of a subset is a subset
    again = SplitSettings(heldout_fraction=0.2, val_fraction=0.1, seed=0).parts(
        list(reversed(examples[:500]))
    )
    assert {e.qid for e in again["heldout"]} == {e.qid for e in examples[:500]} & ids["heldout"]


def test_hops_for_uses_gold_path_then_qtype_then_default() -> None:
    path = ((("a", "r1", "x"), ("x", "r2", "b")),)
    assert hops_for(_q(0, gold_paths=path), default=5) == 2
    assert hops_for(_q(0, qtype="movie_to_actor_to_movie_to_writer"), default=5) == 3
    assert hops_for(_q(0, qtype="director_to_movie"), default=5) == 1
    assert hops_for(_q(0), default=2) == 2
