"""``kgqa eval``: run retrieval and the extractive reader over a question file and score it.

Per question it logs the linked entities, top triples, answers, gold and timings to a JSONL
file; the summary has answer-entity recall@K and shortest-path-triple recall@K for K in
{25, 50, 100, 200}, Hit / Hit@1 / Macro-F1 / Micro-F1 of the reader, and mean / p50 / p95
latency per stage.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kgqa.errors import KgqaError
from kgqa.eval.metrics import (
    DEFAULT_KS,
    aggregate,
    latency_summary,
    mean_recall,
    recall_at_k,
    score_answers,
)
from kgqa.retrieval.retriever import ExtractedAnswer, Retrieval, Retriever
from kgqa.types import QAExample

SCHEMA_VERSION = 1
ANSWER_THRESHOLD = 0.5


@dataclass(slots=True)
class EvalSummary:
    """Aggregated metrics of one evaluation run (also its JSON output)."""

    n: int = 0
    failed: int = 0
    answer_recall: dict[int, float] = field(default_factory=dict)
    path_triple_recall: dict[int, float] = field(default_factory=dict)
    reader: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "failed": self.failed,
            "answer_recall": self.answer_recall,
            "path_triple_recall": self.path_triple_recall,
            "reader": self.reader,
            "latency_ms": self.latency_ms,
        }

    def render(self) -> str:
        ks = sorted(self.answer_recall)
        lines = [
            f"questions: {self.n} ({self.failed} failed)",
            "",
            "| metric | " + " | ".join(f"@{k}" for k in ks) + " |",
            "|---|" + "---|" * len(ks),
            "| answer recall | " + " | ".join(_fmt(self.answer_recall[k]) for k in ks) + " |",
            "| path-triple recall | "
            + " | ".join(_fmt(self.path_triple_recall.get(k, math.nan)) for k in ks)
            + " |",
            "",
            "| reader | Hit | Hit@1 | Macro-F1 | Micro-F1 |",
            "|---|---|---|---|---|",
            f"| extractive | {_fmt(self.reader.get('hit'))} | {_fmt(self.reader.get('hit_at_1'))} | "
            f"{_fmt(self.reader.get('macro_f1'))} | {_fmt(self.reader.get('micro_f1'))} |",
            "",
            "| stage | mean ms | p50 ms | p95 ms |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {stage} | {v['mean']:.1f} | {v['p50']:.1f} | {v['p95']:.1f} |"
            for stage, v in self.latency_ms.items()
        ]
        return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.4f}"


def predicted_answers(answers: Sequence[ExtractedAnswer]) -> list[str]:
    """Answers above the threshold, always at least the best one (ranked)."""
    kept = [a.id for a in answers if a.score >= ANSWER_THRESHOLD]
    return kept or [a.id for a in answers[:1]]


def entities_in_top_triples(retrieval: Retrieval, k: int) -> set[str]:
    """Entities (heads and tails) of the k best triples: what answer recall@K counts."""
    sub = retrieval.prepared.subgraph
    top = retrieval.order()[:k]
    return {sub.entity_ids[int(x)] for x in torch.cat([sub.head[top], sub.tail[top]])}


def evaluate_one(
    retriever: Retriever, example: QAExample, *, hops: int | None, ks: Sequence[int] = DEFAULT_KS
) -> dict[str, Any]:
    """Retrieve and read one question; return its JSONL log record with per-question metrics."""
    from retriever_training.labels import shortest_path_labels

    retrieval = retriever.retrieve(example.question, topic_ids=example.topic_ids, hops=hops)
    answers = retriever.extract_answers(retrieval)
    labels = shortest_path_labels(retrieval.prepared.subgraph, example.answers)
    order = retrieval.order()
    positives = set(labels.nonzero().flatten().tolist())
    gold = set(example.answers)
    entity_recall = {
        k: len(gold & entities_in_top_triples(retrieval, k)) / len(gold) if gold else math.nan for k in ks
    }
    path_recall = {k: recall_at_k(order.tolist(), positives, k) if positives else math.nan for k in ks}
    predicted = predicted_answers(answers)
    scores = score_answers(predicted, list(example.answers))
    return {
        "schema_version": SCHEMA_VERSION,
        "qid": example.qid,
        "question": example.question,
        "linked": [t.to_dict() for t in retrieval.topics],
        "top_triples": [t.to_dict() for t in retrieval.top(10)],
        "answers": [a.to_dict() for a in answers],
        "predicted": predicted,
        "gold": list(example.answers),
        "answer_recall": entity_recall,
        "path_triple_recall": path_recall,
        "scores": scores.to_dict(),
        "timings_ms": {k: round(v, 3) for k, v in retrieval.timings_ms.items()},
    }


def summarise(records: Sequence[dict[str, Any]], failed: int) -> EvalSummary:
    """Aggregate per-question records (from ``evaluate_one``) into the summary."""
    from kgqa.eval.metrics import QAScores

    summary = EvalSummary(n=len(records), failed=failed)
    summary.answer_recall = mean_recall([{int(k): v for k, v in r["answer_recall"].items()} for r in records])
    summary.path_triple_recall = mean_recall(
        [{int(k): v for k, v in r["path_triple_recall"].items()} for r in records]
    )
    summary.reader = aggregate([QAScores(**r["scores"]) for r in records])
    stages = sorted({s for r in records for s in r["timings_ms"]})
    summary.latency_ms = {
        s: latency_summary([r["timings_ms"][s] for r in records if s in r["timings_ms"]]) for s in stages
    }
    retrieval_total = [sum(v for s, v in r["timings_ms"].items() if s != "read") for r in records]
    summary.latency_ms["retrieval_total"] = latency_summary(retrieval_total)
    return summary


def evaluate(
    retriever: Retriever,
    examples: Iterable[QAExample],
    *,
    log_path: Path | None,
    hops_of: Callable[[QAExample], int | None],
    on_progress: Callable[[int], None] | None = None,
) -> EvalSummary:
    """Evaluate every example; a question whose topic cannot be found counts as failed (logged)."""
    records: list[dict[str, Any]] = []
    failed = 0
    log = log_path.open("w", encoding="utf-8") if log_path else None
    try:
        for example in examples:
            try:
                record = evaluate_one(retriever, example, hops=hops_of(example))
            except KgqaError as exc:
                failed += 1
                record = {
                    "schema_version": SCHEMA_VERSION,
                    "qid": example.qid,
                    "question": example.question,
                    "error": str(exc),
                }
            else:
                records.append(record)
            if log:
                log.write(json.dumps(record, default=str) + "\n")
            if on_progress:
                on_progress(1)
    finally:
        if log:
            log.close()
    return summarise(records, failed)
