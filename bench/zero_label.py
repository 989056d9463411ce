"""Zero-label benchmark (issue 27): train on questions generated from the graph alone
(``kgqa train --from-graph``, no labelled question), then score the held-out part of the
dataset's real question files with no hop count given.

The dataset's KB is loaded into ``--data-dir`` first (a no-op when it is there already). The
checkpoint's split is content-keyed, so the held-out part of each real file is the same part a
checkpoint trained on that file's labels would hold out: the two rows compare. Nothing of the
real files reaches training or tuning here; the generated questions come from the graph's
triples and relation names only (:mod:`retriever_training.from_graph`).

Targets (issue 27; 2-core CPU, generation and training <= 15 min per graph): held-out Hit@1
MetaQA dev >= 0.90 / 0.80 / 0.70 (1/2/3-hop), WorldCup2014 WC-P2 >= 0.85, PQ-2H on its own KB
>= 0.80, WebQSP-evidence learn file >= 0.50.

usage: python -m bench.zero_label --data-dir DIR --dataset metaqa|wc2014|pq-2h|webqsp-evidence
       [--size tiny|small|full] [--graph-questions N] [--repeat SEEDS]
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from bench.common import (
    HELDOUT_SIZES,
    REPO,
    SHARED_DATA,
    append_jsonl,
    environment,
    heldout_size_option,
    markdown_table,
    out_option,
)
from bench.retrieval import FILES

#: dataset -> (KB file, KB format, [(split name, question file, lines file, question format)]);
#: the question files are bench.retrieval's, so the two benches score the same held-out parts.
DATASETS: dict[str, tuple[Path, str, list[tuple[str, Path, Path | None, str]]]] = {
    "metaqa": (SHARED_DATA / "metaqa" / "kb.txt.gz", "metaqa", FILES["metaqa"]),
    # The bundled slice (examples/metaqa_movies): the smoke test's dataset, not a benchmark.
    "metaqa-slice": (
        REPO / "examples" / "metaqa_movies" / "kb.txt",
        "metaqa",
        [("slice", REPO / "examples" / "metaqa_movies" / "questions.txt", None, "metaqa")],
    ),
    "wc2014": (SHARED_DATA / "wc2014" / "WC2014.txt", "tsv", FILES["wc2014"]),
    "pq-2h": (SHARED_DATA / "pathquestion" / "2H-kb.txt", "tsv", FILES["pq-2h"]),
    "webqsp-evidence": (SHARED_DATA / "webqsp_evidence" / "kb.tsv.gz", "tsv", FILES["webqsp-evidence"]),
}


def _train(settings: Any, checkpoint: Path, *, questions: int, seed: int, epochs: int) -> dict[str, Any]:
    """Generate ``questions`` from the graph and train ``checkpoint`` on them alone; the generation
    report and the training report."""
    from kgqa.eval.splits import SplitSettings
    from kgqa.pipeline import subgraph_settings
    from kgqa.store import open_store
    from retriever_training.from_graph import graph_questions_file
    from retriever_training.run import run_training
    from retriever_training.train import TrainSettings

    started = time.perf_counter()
    with open_store(settings.store) as store:
        generated = graph_questions_file(store, settings.store.data_dir, count=questions, seed=seed)
    generation_s = time.perf_counter() - started
    report = run_training(
        settings,
        [(Path(generated.path), "rog-jsonl")],
        checkpoint,
        subgraph=subgraph_settings(settings),
        oracle_hops=False,
        split=SplitSettings(seed=seed),
        train_settings=TrainSettings(epochs=epochs, seed=seed),
        limit=None,
        progress=False,
        cache_dir=settings.store.data_dir / "example-cache",
    )
    return {
        "generated": generated.to_dict(),
        "generation_s": generation_s,
        "train": report.to_dict(),
        "train_s": time.perf_counter() - started - generation_s,
    }


@click.command()
@click.option("--dataset", type=click.Choice(sorted(DATASETS)), default="metaqa", show_default=True)
@heldout_size_option()
@click.option(
    "--repeat", type=click.IntRange(min=1), default=1, show_default=True, help="Training seeds (0..N-1)."
)
@click.option("--device", default="cpu", show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kgqa-data"),
    show_default=True,
    help="Store of the dataset's KB (loaded there first when absent).",
)
@click.option(
    "--graph-questions",
    type=click.IntRange(min=1),
    default=2000,
    show_default=True,
    help="Questions generated.",
)
@click.option(
    "--epochs", type=click.IntRange(min=1), default=8, show_default=True, help="Most epochs per model."
)
@out_option("zero_label")
def main(
    dataset: str,
    size: str,
    repeat: int,
    device: str,
    data_dir: Path,
    graph_questions: int,
    epochs: int,
    out: Path,
) -> None:
    """Train from the graph alone, score held-out real questions (no hop count given)."""
    from bench.common import retriever_settings
    from ingest.pipeline import ingest_source
    from kgqa.eval.run import evaluate
    from kgqa.eval.session import select
    from kgqa.eval.splits import AUTO_HOPS, hops_reader
    from kgqa.pipeline import open_asker

    kb, kb_format, files = DATASETS[dataset]
    for path in (kb, *(f for _, f, _, _ in files)):
        if not path.exists():
            raise click.ClickException(f"{path} is not available (benchmarks read ../shared/data)")
    rows: list[list[Any]] = []
    record: dict[str, Any] = {
        "bench": "zero_label",
        "dataset": dataset,
        "size": size,
        "graph_questions": graph_questions,
        "epochs": epochs,
        "runs": [],
        **environment(device),
    }
    for seed in range(repeat):
        checkpoint = data_dir / f"zero-label-{graph_questions}-s{seed}.pt"
        settings = retriever_settings(data_dir, device, checkpoint)
        ingest_source(settings, kb, kb_format, options={}, force=False, progress=False)
        run = _train(settings, checkpoint, questions=graph_questions, seed=seed, epochs=epochs)
        run["seed"] = seed
        hops_of = hops_reader(AUTO_HOPS, settings.retrieval.hops)
        with open_asker(settings) as asker:
            for name, path, lines, fmt in files:
                examples = select(
                    settings, path, fmt, limit=HELDOUT_SIZES[size], lines_file=lines, heldout=True
                )
                summary = evaluate(asker, examples, log_path=None, hops_of=hops_of)
                run[name] = summary.to_dict()
                rows.append(
                    [
                        name,
                        seed,
                        summary.n,
                        f"{summary.answer_recall[100]:.4f}",
                        f"{summary.plan_hit_at_1:.4f}",
                        f"{summary.reader['hit_at_1']:.4f}",
                        f"{summary.reader['macro_f1']:.4f}",
                        f"{run['generation_s']:.0f}",
                        f"{run['train_s']:.0f}",
                    ]
                )
        record["runs"].append(run)
    click.echo(
        f"{dataset}: trained on {graph_questions} questions generated from the graph (no labels), "
        f"scored on held-out real questions ({size}), no hop count given"
    )
    click.echo(
        markdown_table(
            [
                "split",
                "seed",
                "n",
                "answer R@100",
                "plan Hit@1",
                "Hit@1",
                "Macro-F1",
                "generate s",
                "train s",
            ],
            rows,
        )
    )
    append_jsonl(out, record)


if __name__ == "__main__":
    main()
