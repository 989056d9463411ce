"""``kgqa eval --format stark`` with a MoR checkpoint: STaRK's metrics next to the KGQA ones.

Per question, the ranked node ids give STaRK's Hit@1, Hit@5, Recall@20 and MRR
(:func:`~kgqa.eval.metrics.stark_scores`); the first :data:`ANSWER_K` of them are the
predicted answers of the KGQA metrics (Hit, Hit@1, Macro-/Micro-F1 over node ids). Each
question's record goes to the JSONL log that ``kgqa eval`` keeps for KGQA files too
(:mod:`kgqa.eval.log`), so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kgqa.config import Settings
from kgqa.errors import KgqaError
from kgqa.eval.datasets import read_questions, sample
from kgqa.eval.log import answer_and_log, checkpoint_identity, fingerprint
from kgqa.eval.metrics import (
    QAScores,
    StarkScores,
    aggregate,
    latency_summary,
    mean_stark,
    score_answers,
    stark_scores,
)
from kgqa.pipeline import open_mor_retriever
from kgqa.retrieval.mor.plan import store_metapath
from kgqa.retrieval.mor.retriever import MorRetriever
from kgqa.types import QAExample

#: Answers of a MoR question the KGQA metrics score: the top 5 of its ranking, what ``kgqa ask``
#: showed when the MoR results in docs/results.md were measured (it now shows ``answer.max_answers``).
ANSWER_K = 5


@dataclass(slots=True)
class MorEvalSummary:
    """Aggregated metrics of one MoR evaluation (also its JSON output).

    Attributes:
        n: questions answered (counted); ``failed``: questions that raised (logged, not counted,
            retried by a re-run); ``resumed``: answers of ``n`` taken from the log.
        stark: mean Hit@1, Hit@5, Recall@20, MRR; ``kgqa``: Hit, Hit@1, Macro-/Micro-F1 of the top
            ``ANSWER_K``; ``per_kind``: STaRK metrics per question template; ``plan_accuracy``:
            share of questions whose plan is the file's gold metapath (nan when none has one).
    """

    n: int = 0
    failed: int = 0
    resumed: int = 0
    stark: dict[str, float] = field(default_factory=dict)
    kgqa: dict[str, float] = field(default_factory=dict)
    per_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    plan_accuracy: float = math.nan
    latency_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "failed": self.failed,
            "resumed": self.resumed,
            "stark": self.stark,
            "kgqa": self.kgqa,
            "per_kind": self.per_kind,
            "plan_accuracy": self.plan_accuracy,
            "latency_ms": self.latency_ms,
        }

    def render(self) -> str:
        lines = [
            f"questions: {self.n} ({self.resumed} from the log, {self.failed} failed); "
            f"the plan is the gold metapath for {self.plan_accuracy:.4f} of them",
            "",
            "| kind | Hit@1 | Hit@5 | R@20 | MRR |",
            "|---|---|---|---|---|",
        ]
        for kind, m in [("all", self.stark), *self.per_kind.items()]:
            cells = " | ".join(f"{m[k]:.4f}" for k in ("hit_at_1", "hit_at_5", "recall_at_20", "mrr"))
            lines.append(f"| {kind} | {cells} |")
        k = self.kgqa
        lines += [
            "",
            f"KGQA metrics (top {ANSWER_K}): Hit {k['hit']:.4f}, Hit@1 {k['hit_at_1']:.4f}, "
            f"Macro-F1 {k['macro_f1']:.4f}, Micro-F1 {k['micro_f1']:.4f}",
            f"latency: p50 {self.latency_ms['p50']:.1f} ms, p95 {self.latency_ms['p95']:.1f} ms",
        ]
        return "\n".join(lines)


def evaluate_mor(
    retriever: MorRetriever,
    examples: Sequence[QAExample],
    *,
    log_path: Path | None,
    gold_plan: Callable[[QAExample], tuple[str, ...] | None],
    fingerprint: str = "",
    restart: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> MorEvalSummary:
    """Answer every example not yet in the log through the one eval loop
    (:func:`kgqa.eval.log.answer_and_log`, as KGQA questions are), and aggregate.

    Resumes from ``log_path`` (records of the same ``fingerprint``) unless ``restart``; the
    summary covers exactly ``examples``, whichever run answered them. A question that raises a
    :class:`~kgqa.errors.KgqaError` is logged with the error and counted as failed; a re-run
    retries it.

    Args:
        gold_plan: the key of an example's gold plan in the store's names, or None.
    """

    def answer(todo: list[QAExample]) -> Iterator[dict[str, Any]]:
        for ex in todo:
            try:
                yield _record(retriever, ex, gold_plan(ex))
            except KgqaError as exc:
                yield {"qid": ex.qid, "question": ex.question, "error": str(exc)}

    run = answer_and_log(
        list(examples),
        answer,
        log_path=log_path,
        fingerprint=fingerprint,
        restart=restart,
        on_progress=on_progress,
    )
    answered = {r["qid"]: r for r in run.records}
    summary = summarise_mor([answered[e.qid] for e in examples if e.qid in answered])  # question order
    summary.failed, summary.resumed = run.failed, run.resumed
    return summary


def _record(retriever: MorRetriever, ex: QAExample, gold: tuple[str, ...] | None) -> dict[str, Any]:
    """One question's log record: its plan, ranking, gold and scores."""
    result = retriever.retrieve(ex.question)
    ranked = [n.id for n in result.nodes]
    return {
        "qid": ex.qid,
        "kind": ex.qtype,
        "question": ex.question,
        "plan": str(result.plan),
        "plans": [[str(p), prob] for p, prob in result.plans],
        "plan_hit": None if gold is None else result.plan.key == gold,
        "ranked": ranked,
        "gold": list(ex.answers),
        "stark": stark_scores(ranked, ex.answers).to_dict(),
        "kgqa": score_answers(ranked[:ANSWER_K], list(ex.answers)).to_dict(),
        "ms": sum(result.timings_ms.values()),
    }


def summarise_mor(records: Sequence[dict[str, Any]]) -> MorEvalSummary:
    """Aggregate per-question records of :func:`evaluate_mor`."""
    kinds: dict[str, list[StarkScores]] = {}
    for r in records:
        kinds.setdefault(r["kind"] or "-", []).append(StarkScores(**r["stark"]))
    hits = [r["plan_hit"] for r in records if r["plan_hit"] is not None]
    return MorEvalSummary(
        n=len(records),
        stark=mean_stark([StarkScores(**r["stark"]) for r in records]),
        kgqa=aggregate([QAScores(**r["kgqa"]) for r in records]),
        per_kind={k: mean_stark(v) for k, v in sorted(kinds.items())},
        plan_accuracy=sum(hits) / len(hits) if hits else math.nan,
        latency_ms=latency_summary([r["ms"] for r in records]),
    )


def mor_fingerprint(settings: Settings) -> str:
    """Hash of what changes a MoR answer: the checkpoint file, the store and the retrieval settings."""
    return fingerprint(
        {
            "kind": "mor",
            "checkpoint": checkpoint_identity(settings.checkpoint_path),
            "store": settings.store.model_dump(mode="json", exclude={"neo4j_password"}),
            "retrieval": settings.retrieval.model_dump(mode="json"),
        }
    )


def run_mor_eval(
    settings: Settings,
    path: Path,
    *,
    limit: int | None,
    log_path: Path | None,
    progress: bool,
    restart: bool = False,
) -> MorEvalSummary:
    """Evaluate the configured MoR checkpoint on a STaRK-format question file (a fixed sample of
    ``limit`` questions when given), resuming from ``log_path`` unless ``restart``."""
    examples = sample(list(read_questions(path, "stark")), limit)

    def gold_plan(example: QAExample) -> tuple[str, ...] | None:
        return store_metapath(example.metapath).key if example.metapath else None

    with (
        open_mor_retriever(settings) as retriever,
        tqdm(total=len(examples), desc="eval", disable=not progress, leave=False) as bar,
    ):
        return evaluate_mor(
            retriever,
            examples,
            log_path=log_path,
            gold_plan=gold_plan,
            fingerprint=mor_fingerprint(settings),
            restart=restart,
            on_progress=bar.update,
        )
