"""MoR benchmark: STaRK metrics and latency of each retrieval channel and of full MoR, one run.

Systems, all behind the same trained planner (which names the answer type) on one store:

- ``text-only (vector)``: answer-type nodes nearest to the question's description (or the
  whole question) in the vector index, by cosine;
- ``full-text only``: the same from the full-text index over node texts, by its score;
- ``traversal-only``: structure alone: the plan's chains from its named anchors, no text
  matching anywhere (chains from described anchors dropped, described nodes not filtered),
  ranked without the reranker;
- ``traversal + text anchors``: the chains with their text restrictions matched (MoR's mixture
  inside the traversal) but without the answer type's direct textual channels, no reranker;
- ``MoR w/o reranker``: all of it, ranked without the reranker;
- ``MoR``: the same candidates ranked by the trained trajectory reranker.

Each system runs its own retrieval per question, so latencies are each system's own (the first
question, which loads models and caches, is run once before timing). Needs a store holding the
HPO graph and a checkpoint from ``kgqa train --format stark``.

Targets (issue 13): MoR beats the best single channel by >= 25 points of Hit@1 and reaches
Hit@1 >= 0.85, Hit@5 >= 0.95, R@20 >= 0.95, MRR >= 0.90 on every question kind; p50 <= 150 ms.

usage: python -m bench.mor --data-dir DIR --checkpoint FILE [--questions FILE] [--limit N]
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from bench.common import (
    SHARED_DATA,
    append_jsonl,
    environment,
    markdown_table,
    out_option,
    retriever_settings,
)

SYSTEMS = (
    "text-only (vector)",
    "full-text only",
    "traversal-only",
    "traversal + text anchors",
    "MoR w/o reranker",
    "MoR",
)
METRICS = ("hit_at_1", "hit_at_5", "recall_at_20", "mrr")


def _ranker(system: str, retriever: Any) -> Callable[[str], list[str]]:
    """question -> ranked node ids, for one system."""
    from kgqa.retrieval.mor.traversal import FULLTEXT_CHANNEL, VECTOR_CHANNEL

    if system in ("text-only (vector)", "full-text only"):
        channel = VECTOR_CHANNEL if system == "text-only (vector)" else FULLTEXT_CHANNEL

        def textual(question: str) -> list[str]:
            runs, _ = retriever.candidates(question, structural=False)
            found = runs[0].candidates  # the heaviest plan's answer type
            scored = [
                (max(scores), c.id)
                for c in found
                if (scores := [t.score for t in c.trajectories if t.chain == channel])
            ]
            return [i for _, i in sorted(scored, key=lambda p: (-p[0], p[1]))]

        return textual
    with_text = system in ("MoR w/o reranker", "MoR")
    text_matching = system != "traversal-only"
    rerank = system == "MoR"

    def mixed(question: str) -> list[str]:
        result = retriever.retrieve(question, textual=with_text, text_matching=text_matching, rerank=rerank)
        return [n.id for n in result.nodes]

    return mixed


@click.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--checkpoint", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option(
    "--questions",
    type=click.Path(dir_okay=False, path_type=Path),
    default=SHARED_DATA / "hpo" / "qa_val.csv",
    show_default=True,
)
@click.option("--limit", type=int, help="Only the first N questions.")
@out_option("mor")
def main(data_dir: Path, checkpoint: Path, questions: Path, limit: int | None, out: Path) -> None:
    from kgqa.embed import make_embedder
    from kgqa.eval.datasets import read_questions
    from kgqa.eval.metrics import latency_summary, mean_stark, stark_scores
    from kgqa.retrieval.mor.retriever import MorModel, MorRetriever
    from kgqa.store import open_store

    settings = retriever_settings(data_dir, "cpu", checkpoint)
    examples = list(read_questions(questions, "stark", limit=limit))
    embedder = make_embedder(settings.embedder)
    model = MorModel.load(checkpoint, embedder_model_id=embedder.model_id)
    results: dict[str, Any] = {}
    with open_store(settings.store) as store:
        retriever = MorRetriever(store, embedder, model)
        retriever.retrieve(examples[0].question)  # warm-up: models, caches
        for system in SYSTEMS:
            rank = _ranker(system, retriever)
            by_kind: dict[str, list[Any]] = collections.defaultdict(list)
            latencies = []
            for ex in examples:
                started = time.perf_counter()
                ranked = rank(ex.question)
                latencies.append((time.perf_counter() - started) * 1000)
                by_kind[ex.qtype or "-"].append(stark_scores(ranked, ex.answers))
            everything = [s for scores in by_kind.values() for s in scores]
            results[system] = {
                "all": mean_stark(everything),
                "kinds": {k: mean_stark(v) for k, v in sorted(by_kind.items())},
                "n": {k: len(v) for k, v in sorted(by_kind.items())},
                "latency_ms": latency_summary(latencies),
            }
    header = ["system", "Hit@1", "Hit@5", "R@20", "MRR", "p50 ms", "p95 ms"]
    rows = [
        [
            s,
            *(f"{r['all'][m]:.3f}" for m in METRICS),
            f"{r['latency_ms']['p50']:.0f}",
            f"{r['latency_ms']['p95']:.0f}",
        ]
        for s, r in results.items()
    ]
    click.echo(f"{len(examples)} questions from {questions}\n")
    click.echo(markdown_table(header, rows))
    kinds = sorted(results["MoR"]["kinds"])
    click.echo("\nHit@1 per question kind (template):\n")
    click.echo(
        markdown_table(
            ["system", *(f"{k} (n={results['MoR']['n'][k]})" for k in kinds)],
            [[s, *(f"{r['kinds'][k]['hit_at_1']:.3f}" for k in kinds)] for s, r in results.items()],
        )
    )
    click.echo("\nMoR per question kind:\n")
    mor = results["MoR"]["kinds"]
    click.echo(
        markdown_table(
            ["kind", "Hit@1", "Hit@5", "R@20", "MRR"],
            [[k, *(f"{mor[k][m]:.3f}" for m in METRICS)] for k in kinds],
        )
    )
    append_jsonl(
        out,
        {
            **environment("cpu"),
            "questions": str(questions),
            "checkpoint": str(checkpoint),
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
