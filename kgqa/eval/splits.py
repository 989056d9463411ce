"""Which questions a run may use: the deterministic train/val/held-out split and hop counts.

Training writes the split into its checkpoint; ``kgqa eval --heldout`` and the benchmarks
re-derive the held-out part from it, so both sides must read the same code.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def hops_for(example: QAExample, default: int) -> int:
    """Hop count of a question where the data says it (gold path length, MetaQA qtype), else default."""
    if example.gold_paths:
        return max(len(p) for p in example.gold_paths)
    if example.qtype:
        return max(1, example.qtype.count("_to_"))
    return default
