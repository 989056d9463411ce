"""Which questions a run may use: the deterministic train/val/held-out split and hop counts.

Training writes the split into its checkpoint; ``kgqa eval --heldout`` and the benchmarks
re-derive the held-out part from it, so both sides must read the same code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kgqa.config import TRAIN_DEFAULTS, TrainingSettings
from kgqa.eval.datasets import split_train_val
from kgqa.types import QAExample

#: What decides an example's part: ``"content"`` its question text and answers (a renamed or
#: reordered copy of a file splits the same), ``"qid"`` its id, which for files without ids
#: is ``<file stem>:<line>`` (how checkpoints written before the key existed were split).
SplitKey = Literal["content", "qid"]


@dataclass(frozen=True, slots=True)
class SplitSettings:
    """How question files are split; stored in the checkpoint (defaults: the ``[train]`` section)."""

    heldout_fraction: float = TRAIN_DEFAULTS.heldout_fraction
    val_fraction: float = TRAIN_DEFAULTS.val_fraction
    seed: int = TRAIN_DEFAULTS.seed
    key: SplitKey = "content"

    @classmethod
    def from_config(cls, train: TrainingSettings) -> SplitSettings:
        """The split the config's ``[train]`` section asks for (its fractions and seed)."""
        return cls(train.heldout_fraction, train.val_fraction, train.seed)

    @classmethod
    def from_checkpoint(cls, stored: Mapping[str, Any]) -> SplitSettings:
        """The split a checkpoint recorded; one written before ``key`` existed was split by qid."""
        return cls(**{"key": "qid", **stored})

    def parts(self, examples: Sequence[QAExample]) -> dict[str, list[QAExample]]:
        """``{"train", "val", "heldout"}``; an example's part depends only on its key and seed."""
        key = content_key if self.key == "content" else None
        rest, heldout = split_train_val(
            examples, val_fraction=self.heldout_fraction, seed=self.seed + 1000, key=key
        )
        train, val = split_train_val(
            rest, val_fraction=self.val_fraction / (1 - self.heldout_fraction), seed=self.seed, key=key
        )
        return {"train": train, "val": val, "heldout": heldout}


def content_key(example: QAExample) -> str:
    """What a question is, wherever it is written: its text and its answers (in any order)."""
    return json.dumps([example.question, sorted(example.answers)], ensure_ascii=False)


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
