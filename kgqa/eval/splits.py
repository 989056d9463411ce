"""Which questions a run may use: the deterministic train/val/held-out split and hop counts.

Training writes the split into its checkpoint; ``kgqa eval --heldout`` and the benchmarks
re-derive the held-out part from it, so both sides must read the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kgqa.eval.datasets import split_train_val
from kgqa.types import QAExample


@dataclass(frozen=True, slots=True)
class SplitSettings:
    """How question files are split; stored in the checkpoint."""

    heldout_fraction: float = 0.2
    val_fraction: float = 0.1
    seed: int = 0

    def parts(self, examples: Sequence[QAExample]) -> dict[str, list[QAExample]]:
        """``{"train", "val", "heldout"}``; an example's part depends only on its qid and seed."""
        rest, heldout = split_train_val(examples, val_fraction=self.heldout_fraction, seed=self.seed + 1000)
        train, val = split_train_val(
            rest, val_fraction=self.val_fraction / (1 - self.heldout_fraction), seed=self.seed
        )
        return {"train": train, "val": val, "heldout": heldout}


#: The ``--hops`` value under which each question is walked as far as its benchmark file says.
ORACLE_HOPS = "oracle"
#: The ``--hops`` value under which every question is walked ``retrieval.hops`` far (the default).
AUTO_HOPS = "auto"


def oracle_hop_count(example: QAExample, default: int) -> int:
    """Hop count of a question where the benchmark file says it (gold path length, MetaQA qtype),
    else ``default``. An ablation only (``--hops oracle``): a person asking a question gives no hop
    count, so the default path walks every question ``retrieval.hops`` far and the planner
    chooses the plan's length (:func:`hops_reader`)."""
    if example.gold_paths:
        return max(len(p) for p in example.gold_paths)
    if example.qtype:
        return max(1, example.qtype.count("_to_"))
    return default


def hops_reader(hops: str, default: int) -> Callable[[QAExample], int]:
    """Per-question subgraph hops for a ``--hops`` value: :data:`AUTO_HOPS` -> ``default`` (the
    configured ``retrieval.hops``) for every question, a number -> that number,
    :data:`ORACLE_HOPS` -> :func:`oracle_hop_count`.

    Raises:
        ValueError: ``hops`` is none of those, or a number below 1.
    """
    if hops == ORACLE_HOPS:
        return lambda example: oracle_hop_count(example, default)
    count = default if hops == AUTO_HOPS else int(hops) if hops.isdigit() else 0
    if count < 1:
        raise ValueError(f"--hops must be a number >= 1, '{AUTO_HOPS}' or '{ORACLE_HOPS}', got {hops!r}")
    return lambda example: count
