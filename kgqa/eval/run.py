"""``kgqa eval``: answer a question file with the configured reader and score it.

Per question it logs the linked entities, top triples, evidence coverage, answers (with the
LLM's raw replies), gold, grounding, tokens and timings to a JSONL log; the summary has
answer-entity recall@K and shortest-path-triple recall@K for K in {25, 50, 100, 200}, Hit /
Hit@1 / Macro-F1 / Micro-F1, Score_h, token counts and mean / p50 / p95 latency per stage.

The log makes runs resumable (:mod:`kgqa.eval.log`): every record carries the run's
fingerprint, and a re-run with the same log skips the questions already answered under the
same fingerprint, so a crashed 5,000-question run restarts where it stopped. LLM calls run
in a bounded thread pool (``reader.concurrency``) while the main thread keeps retrieving.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kgqa.answer import Answer
from kgqa.config import EVAL_DEFAULTS
from kgqa.errors import KgqaError, LLMUnavailableError
from kgqa.eval.log import answer_and_log
from kgqa.eval.metrics import (
    DEFAULT_KS,
    QAScores,
    aggregate,
    grounding_score,
    latency_summary,
    mean_recall,
    recall_at_ks,
    score_answers,
    score_h,
)
from kgqa.pipeline import Asker, Gathered
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.labels import answer_mask, relation_path_labels, shortest_path_labels
from kgqa.retrieval.models.plans import gold_plans
from kgqa.retrieval.retriever import SHOWN_PLANS, RetrievalRequest
from kgqa.store import queries
from kgqa.types import QAExample

SCHEMA_VERSION = 2
#: Stages after retrieval proper; ``retrieval_total`` leaves them out.
ANSWER_STAGES = ("organise", "read")


@dataclass(slots=True)
class EvalSummary:
    """Aggregated metrics of one evaluation run (also its JSON output).

    Attributes:
        n: questions scored (resumed ones included); ``resumed``: of those, read from the log.
        reader: answer metrics, plus ``score_h`` (0-100), ``abstained`` and ``ungrounded`` rates,
            and ``evidence_answer_recall`` (gold answers among the evidence entities).
        tokens: mean prompt / completion tokens per question.
        gold_path_triple_recall: recall@K of the triples on the gold relation path, over the
            questions whose file names one (empty when none does).
        plan_hit_at_1: how often the planner's likeliest plan is a gold plan
            (:func:`~kgqa.retrieval.models.plans.gold_plans`); nan without a planner.
        linking_top1: how often the linked first topic is one of the file's topics, over the
            questions the linker answered (free text) where the file names their topics; nan
            when every question came with its topics.
        miss_causes: the questions whose first answer is wrong (failed ones included), by the
            first stage that lost them (:data:`MISS_CAUSES`, :func:`miss_cause`), each as a
            share of all ``n + failed`` questions.
    """

    n: int = 0
    failed: int = 0
    resumed: int = 0
    reader_name: str = ""
    answer_recall: dict[int, float] = field(default_factory=dict)
    path_triple_recall: dict[int, float] = field(default_factory=dict)
    gold_path_triple_recall: dict[int, float] = field(default_factory=dict)
    plan_hit_at_1: float = math.nan
    linking_top1: float = math.nan
    miss_causes: dict[str, float] = field(default_factory=dict)
    reader: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "failed": self.failed,
            "resumed": self.resumed,
            "reader_name": self.reader_name,
            "answer_recall": self.answer_recall,
            "path_triple_recall": self.path_triple_recall,
            "gold_path_triple_recall": self.gold_path_triple_recall,
            "plan_hit_at_1": self.plan_hit_at_1,
            "linking_top1": self.linking_top1,
            "miss_causes": self.miss_causes,
            "reader": self.reader,
            "tokens": self.tokens,
            "latency_ms": self.latency_ms,
        }

    def render(self) -> str:
        ks = sorted(self.answer_recall)
        r = self.reader
        lines = [
            f"questions: {self.n} ({self.failed} failed, {self.resumed} resumed from the log)",
            "",
            "| metric | " + " | ".join(f"@{k}" for k in ks) + " |",
            "|---|" + "---|" * len(ks),
            "| answer recall | " + " | ".join(_fmt(self.answer_recall[k]) for k in ks) + " |",
            "| path-triple recall | "
            + " | ".join(_fmt(self.path_triple_recall.get(k, math.nan)) for k in ks)
            + " |",
            "| gold-path-triple recall | "
            + " | ".join(_fmt(self.gold_path_triple_recall.get(k, math.nan)) for k in ks)
            + " |",
            "",
            f"planner: the likeliest plan is gold for {_fmt(self.plan_hit_at_1)} of the questions",
            f"linking: the first linked topic is the file's for {_fmt(self.linking_top1)} of the questions",
            "misses by stage (share of all questions): "
            + ", ".join(f"{cause} {_fmt(share)}" for cause, share in self.miss_causes.items()),
            "",
            "| reader | Hit | Hit@1 | Macro-F1 | Micro-F1 | Score_h | abstained | ungrounded | "
            "evidence recall | prompt tokens |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {self.reader_name} | {_fmt(r.get('hit'))} | {_fmt(r.get('hit_at_1'))} | "
            f"{_fmt(r.get('macro_f1'))} | {_fmt(r.get('micro_f1'))} | {_fmt(r.get('score_h'), 1)} | "
            f"{_fmt(r.get('abstained'))} | {_fmt(r.get('ungrounded'))} | "
            f"{_fmt(r.get('evidence_answer_recall'))} | {_fmt(self.tokens.get('prompt'), 0)} |",
            "",
            "| stage | mean ms | p50 ms | p95 ms |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {stage} | {v['mean']:.1f} | {v['p50']:.1f} | {v['p95']:.1f} |"
            for stage, v in self.latency_ms.items()
        ]
        return "\n".join(lines)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def predicted_answers(answer: Answer) -> list[str]:
    """What the answer metrics score, best first: every answer the reader gave (the extractive
    reader's calibrated answer set, the plan's ends, the LLM's answers), by entity id where it
    has one, else by the name the model wrote."""
    return [a.id or a.name for a in answer.answers]


def entities_in_top_triples(sub: Subgraph, order: torch.Tensor, k: int) -> set[str]:
    """Entities (heads and tails) of the k best triples (``order``: triples best first): what
    answer recall@K counts."""
    top = order[:k]
    return {sub.entity_ids[int(x)] for x in torch.cat([sub.head[top], sub.tail[top]])}


def retrieval_record(
    gathered: Gathered, example: QAExample, *, ks: Sequence[int] = DEFAULT_KS, linked: bool = False
) -> dict[str, Any]:
    """The retrieval half of a question's log record: linking, recalls, evidence coverage.

    ``linked``: the linker chose the topics (free text), so ``linking_top1`` says whether the
    first one is among the file's topics (nan where the file names none).
    """
    retrieval, evidence = gathered.retrieval, gathered.evidence
    sub = retrieval.prepared.subgraph
    labels = shortest_path_labels(sub, example.answers)
    gold_path = relation_path_labels(sub, example.answers, example.relation_paths)
    order = retrieval.order()
    positives = set(labels.nonzero().flatten().tolist())
    gold = set(example.answers)
    entity_recall = {
        k: len(gold & entities_in_top_triples(sub, order, k)) / len(gold) if gold else math.nan for k in ks
    }
    ranked = order.tolist()
    path_recall = recall_at_ks(ranked, positives, ks)
    shown = {sub.entity_ids[e] for e in evidence.entities()}
    plans, plan_hit = retrieval.plans, math.nan
    if plans is not None and plans.plans.num_plans:
        gold_plan = gold_plans(
            plans.plans, sub, answer_mask(retrieval.prepared, gold), example.relation_paths
        )
        plan_hit = float(gold_plan[int(torch.argmax(plans.probabilities))]) if gold_plan.any() else math.nan
    linking_top1 = math.nan
    if linked and example.topic_ids:
        linking_top1 = float(bool(retrieval.topics) and retrieval.topics[0].id in example.topic_ids)
    disambiguation = retrieval.disambiguation
    return {
        "schema_version": SCHEMA_VERSION,
        "qid": example.qid,
        "question": example.question,
        "linked": [t.to_dict() for t in retrieval.topics],
        "linking_top1": linking_top1,
        "disambiguation": disambiguation.to_dict() if disambiguation is not None else None,
        "top_triples": [t.to_dict() for t in retrieval.top(10)],
        "gold": list(example.answers),
        "answer_recall": entity_recall,
        "path_triple_recall": path_recall,
        "gold_path_triple_recall": recall_at_ks(ranked, set(gold_path.nonzero().flatten().tolist()), ks),
        "evidence_answer_recall": len(gold & shown) / len(gold) if gold else math.nan,
        "evidence_items": len(evidence.items),
        "plans": plans.describe(sub, SHOWN_PLANS) if plans is not None else [],
        "plan_hit_at_1": plan_hit,
    }


def answer_record(answer: Answer, example: QAExample, *, answer_in_kg: bool) -> dict[str, Any]:
    """The reader half of a question's log record: answers, scores, grounding, tokens, timings."""
    predicted = predicted_answers(answer)
    grounded = {a.id or a.name: a.grounded for a in answer.answers}
    return {
        "reader": answer.reader,
        "answers": [a.to_dict() for a in answer.answers],
        "abstained": answer.abstained,
        "raw_replies": list(answer.raw_replies),
        "predicted": predicted,
        "scores": score_answers(predicted, list(example.answers)).to_dict(),
        "answer_in_kg": answer_in_kg,
        "grounding": grounding_score(
            [(p, grounded.get(p, False)) for p in predicted], list(example.answers), answer_in_kg=answer_in_kg
        ),
        "tokens": {"prompt": answer.prompt_tokens, "completion": answer.completion_tokens},
        "timings_ms": {k: round(v, 3) for k, v in answer.timings_ms.items()},
    }


#: Where a question with a wrong first answer was lost, in pipeline order (:func:`miss_cause`).
MISS_CAUSES = ("linking", "retrieval", "no_plan", "plan", "reader")
#: The top triples whose entities must hold an answer for retrieval to count as found.
MISS_RECALL_K = 100


def miss_cause(record: dict[str, Any]) -> str | None:
    """The first stage that lost a scored question, ``None`` when its first answer is right.

    ``linking``: the linked first topic is not the file's; ``retrieval``: no gold answer among
    the entities of the top :data:`MISS_RECALL_K` triples; ``no_plan``: no plan the subgraph
    can walk ends at an answer (under the checkpoint's walk rule, ``Subgraph.topic_walks``: where
    plans never come back through a topic, an answer reached only that way, or the topic itself
    as the answer, is out of every plan's reach); ``plan``: the
    planner's likeliest relation path is not gold; ``reader``: the rest (right plan, or no
    planner, and a wrong entity first). A failed question (topic not found) is a linking miss
    and has no record.
    """
    if record["scores"]["hit_at_1"] >= 1.0:
        return None
    if record.get("linking_top1") == 0.0:
        return "linking"
    if record["answer_recall"].get(MISS_RECALL_K, record["answer_recall"].get(str(MISS_RECALL_K))) == 0.0:
        return "retrieval"
    planned = bool(record.get("plans"))
    plan_hit = record.get("plan_hit_at_1")
    if planned and (plan_hit is None or math.isnan(plan_hit)):
        return "no_plan"
    if planned and plan_hit != 1.0:
        return "plan"
    return "reader"


def miss_shares(records: Sequence[dict[str, Any]], failed: int) -> dict[str, float]:
    """Share of all questions (``failed`` ones included) lost at each of :data:`MISS_CAUSES`."""
    total = len(records) + failed
    counts = dict.fromkeys(MISS_CAUSES, 0)
    counts["linking"] += failed
    for record in records:
        cause = miss_cause(record)
        if cause is not None:
            counts[cause] += 1
    return {cause: count / total if total else math.nan for cause, count in counts.items()}


def _mean(values: Iterable[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def summarise(records: Sequence[dict[str, Any]], failed: int, *, resumed: int = 0) -> EvalSummary:
    """Aggregate per-question records (retrieval + answer halves) into the summary."""
    summary = EvalSummary(n=len(records), failed=failed, resumed=resumed)
    summary.reader_name = ", ".join(sorted({r["reader"] for r in records}))
    summary.answer_recall = mean_recall([{int(k): v for k, v in r["answer_recall"].items()} for r in records])
    summary.path_triple_recall = mean_recall(
        [{int(k): v for k, v in r["path_triple_recall"].items()} for r in records]
    )
    summary.gold_path_triple_recall = mean_recall(
        [{int(k): v for k, v in r.get("gold_path_triple_recall", {}).items()} for r in records]
    )
    summary.plan_hit_at_1 = _mean(r.get("plan_hit_at_1", math.nan) for r in records)
    summary.linking_top1 = _mean(r.get("linking_top1", math.nan) for r in records)
    summary.miss_causes = miss_shares(records, failed)
    summary.reader = aggregate([QAScores(**r["scores"]) for r in records])
    summary.reader["score_h"] = score_h(
        [r["grounding"] for r in records],
        any_answer_missing_from_kg=any(not r["answer_in_kg"] for r in records),
    )
    summary.reader["abstained"] = _mean(float(r["abstained"]) for r in records)
    summary.reader["ungrounded"] = _mean(float(not a["grounded"]) for r in records for a in r["answers"])
    summary.reader["evidence_answer_recall"] = _mean(r["evidence_answer_recall"] for r in records)
    summary.tokens = {
        side: _mean(float(r["tokens"][side]) for r in records) for side in ("prompt", "completion")
    }
    stages = sorted({s for r in records for s in r["timings_ms"]})
    summary.latency_ms = {
        s: latency_summary([r["timings_ms"][s] for r in records if s in r["timings_ms"]]) for s in stages
    }
    retrieval_total = [sum(v for s, v in r["timings_ms"].items() if s not in ANSWER_STAGES) for r in records]
    summary.latency_ms["retrieval_total"] = latency_summary(retrieval_total)
    return summary


def answer_in_kg(asker: Asker, example: QAExample) -> bool:
    """Whether some gold answer entity exists in the store (Score_h's split)."""
    rows = asker.retriever.store.run(queries.get("entities_names"), {"ids": list(example.answers)})
    return bool(rows)


def _pending(
    asker: Asker,
    examples: Iterable[QAExample],
    hops_of: Callable[[QAExample], int | None],
    pool: ThreadPoolExecutor | None,
    window: int,
    free_text: bool,
    batch: int,
    threads: int,
) -> Iterator[tuple[QAExample, Future[dict[str, Any]] | KgqaError]]:
    """Gather ``batch`` questions at a time on this thread (:meth:`Asker.gather_many`, on
    ``threads`` threads) and read each in ``pool`` (inline when ``None``).

    At most ``window`` reads are in flight; results come back in question order.
    """
    in_flight: list[tuple[QAExample, Future[dict[str, Any]]]] = []
    for chunk in _chunks(examples, batch):
        for example, gathered in zip(chunk, _gather(asker, chunk, hops_of, free_text, threads), strict=True):
            if isinstance(gathered, KgqaError):
                yield example, gathered
                continue
            try:
                in_kg = answer_in_kg(asker, example)
            except KgqaError as exc:
                yield example, exc
                continue
            linked = free_text or not example.topic_ids
            if pool is None:
                future: Future[dict[str, Any]] = Future()
                try:
                    future.set_result(_read_one(asker, gathered, example, in_kg, linked))
                except KgqaError as exc:
                    future.set_exception(exc)
            else:
                future = pool.submit(_read_one, asker, gathered, example, in_kg, linked)
            in_flight.append((example, future))
            while len(in_flight) >= window or (in_flight and in_flight[0][1].done()):
                yield in_flight.pop(0)
    yield from in_flight


def _chunks(examples: Iterable[QAExample], size: int) -> Iterator[list[QAExample]]:
    """``examples`` in lists of ``size`` (the last may be shorter), read lazily."""
    chunk: list[QAExample] = []
    for example in examples:
        chunk.append(example)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _gather(
    asker: Asker,
    chunk: list[QAExample],
    hops_of: Callable[[QAExample], int | None],
    free_text: bool,
    threads: int,
) -> list[Gathered | KgqaError]:
    """Each question's gathered evidence or its error: the chunk together, and where that fails
    as a whole, each question alone (one question's error is then its own)."""
    requests = [RetrievalRequest(e.question, () if free_text else e.topic_ids, hops_of(e)) for e in chunk]
    try:
        return asker.gather_many(requests, threads=threads, to_read=True)
    except KgqaError as exc:
        if len(chunk) == 1:
            return [exc]
    return [g for example in chunk for g in _gather(asker, [example], hops_of, free_text, threads)]


def _read_one(
    asker: Asker, gathered: Gathered, example: QAExample, in_kg: bool, linked: bool
) -> dict[str, Any]:
    answer = asker.read(gathered)
    return {
        **retrieval_record(gathered, example, linked=linked),
        **answer_record(answer, example, answer_in_kg=in_kg),
    }


def answer_records(
    asker: Asker,
    examples: Iterable[QAExample],
    hops_of: Callable[[QAExample], int | None],
    *,
    concurrency: int = 1,
    free_text: bool = False,
    batch: int = EVAL_DEFAULTS.batch_size,
    threads: int = 1,
) -> Iterator[dict[str, Any]]:
    """Each example's log record, in order: retrieval and answer halves, or, for a question whose
    topic cannot be found or whose reader fails for good, ``{"qid", "question", "error"}``.

    An LLM backend that is down (:class:`~kgqa.errors.LLMUnavailableError`, after its retries)
    is raised instead: every later question would spend the same retries and fail the same way.

    With ``free_text`` the linker finds every question's topics, as for a question typed without
    brackets; the file's topics serve only as the gold of ``linking_top1``. Questions whose file
    names no topic (bracket-free MetaQA lines) are linked either way.
    """
    # The extractive reader shares the retriever's lazily filled tables with gather(): read inline.
    pool = ThreadPoolExecutor(max_workers=concurrency) if asker.llm is not None else None
    try:
        for example, outcome in _pending(
            asker,
            examples,
            hops_of,
            pool,
            window=2 * concurrency,
            free_text=free_text,
            batch=batch,
            threads=threads,
        ):
            try:
                if isinstance(outcome, KgqaError):
                    raise outcome
                yield outcome.result()
            except LLMUnavailableError:
                raise
            except KgqaError as exc:
                yield {"qid": example.qid, "question": example.question, "error": str(exc)}
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def evaluate_records(
    examples: Iterable[QAExample],
    answer: Callable[[list[QAExample]], Iterable[dict[str, Any]]],
    *,
    log_path: Path | None,
    fingerprint: str = "",
    restart: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> EvalSummary:
    """Score ``examples`` through the one eval loop (:func:`kgqa.eval.log.answer_and_log`):
    ``answer`` gives the records of the questions still to answer (:func:`answer_records` in
    this process, :func:`kgqa.eval.workers.worker_records` in several). The summary covers
    exactly ``examples``. An LLM backend that is down stops the run (as ``kgqa refine`` does)
    with the answers so far logged.
    """
    run = answer_and_log(
        list(examples),
        answer,
        log_path=log_path,
        fingerprint=fingerprint,
        restart=restart,
        on_progress=on_progress,
    )
    return summarise(run.records, run.failed, resumed=run.resumed)


def evaluate(
    asker: Asker,
    examples: Iterable[QAExample],
    *,
    log_path: Path | None,
    hops_of: Callable[[QAExample], int | None],
    fingerprint: str = "",
    concurrency: int = 1,
    restart: bool = False,
    free_text: bool = False,
    on_progress: Callable[[int], None] | None = None,
    batch: int = EVAL_DEFAULTS.batch_size,
    threads: int = 1,
) -> EvalSummary:
    """Evaluate every example with ``asker`` in this process (:func:`answer_records`,
    :func:`evaluate_records`), ``batch`` questions retrieved together on ``threads`` threads."""

    def answer(todo: list[QAExample]) -> Iterator[dict[str, Any]]:
        return answer_records(
            asker, todo, hops_of, concurrency=concurrency, free_text=free_text, batch=batch, threads=threads
        )

    return evaluate_records(
        examples, answer, log_path=log_path, fingerprint=fingerprint, restart=restart, on_progress=on_progress
    )
