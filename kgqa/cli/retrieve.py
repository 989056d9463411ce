"""``kgqa retrieve``, ``kgqa train`` and ``kgqa eval``: the SubgraphRAG retrieval core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.ask import answer_options, answer_overrides
from kgqa.cli.common import (
    auto_hops_option,
    checkpoint_option,
    emit_json,
    json_option,
    question_options,
    resolve,
    store_options,
    store_overrides,
)
from kgqa.config import redacted

QUESTION_FORMATS = ["metaqa", "pathquestion", "wc2014", "rog-jsonl"]


@click.command()
@click.argument("question")
@question_options
@click.option("--top-k", type=int, help="Triples to print (retrieval.top_k, default 100).")
@click.option("--answers/--no-answers", default=True, help="Also run the extractive reader.")
@checkpoint_option
@store_options
@json_option
@pass_state
def retrieve(
    state: CliState,
    question: str,
    topics: tuple[str, ...],
    top_k: int | None,
    hops: int | None,
    answers: bool,
    checkpoint: Path | None,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Score the candidate triples of QUESTION and print the best, with per-stage timings.

    \b
    Example:
      kgqa retrieve "who directed the films starring [Tom Hanks]" --top-k 10
    """
    loaded = resolve(
        state,
        {
            "store": store_overrides(backend, data_dir),
            "retrieval": {"top_k": top_k, "hops": hops, "checkpoint": checkpoint},
        },
    )
    from kgqa.pipeline import open_retriever
    from kgqa.retrieval.retriever import SHOWN_PLANS

    k = loaded.settings.retrieval.top_k
    with open_retriever(loaded.settings) as retriever:
        result = retriever.retrieve(question, topic_ids=topics)
        extracted = retriever.extract_answers(result) if answers else []
    if as_json:
        emit_json({**result.to_dict(k), "answers": [a.to_dict() for a in extracted]})
        return
    click.echo("topics: " + ", ".join(f"{t.name} ({t.method}, {t.score:.2f})" for t in result.topics))
    if result.plans is not None:
        for plan in result.plans.describe(result.prepared.subgraph, SHOWN_PLANS):
            click.echo(f"plan: {' '.join(plan['steps'])}  p={plan['probability']:.3f}")
    for rank, t in enumerate(result.top(k), 1):
        click.echo(f"{rank:>4}. {t.score:.4f}  ({t.head}) -[{t.relation}]-> ({t.tail})  rel {t.rel_eid}")
    for a in extracted:
        click.echo(
            f"answer: {a.name}  p={a.score:.3f}  via "
            + "; ".join(f"({t.head}) -[{t.relation}]-> ({t.tail})" for t in a.support)
        )
    click.echo("timings ms: " + ", ".join(f"{s}={v:.1f}" for s, v in result.timings_ms.items()), err=True)


@click.command()
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--format", "fmt", type=click.Choice(QUESTION_FORMATS), required=True, help="Question file format."
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Checkpoint to write.")
@click.option(
    "--limit",
    type=int,
    help="Use a fixed pseudo-random sample of N training (and N validation) questions per file.",
)
@click.option("--epochs", type=int, default=20, show_default=True)
@click.option("--patience", type=int, default=4, show_default=True, help="Early-stopping patience (epochs).")
@click.option("--hidden", type=int, default=256, show_default=True, help="MLP width (paper: 1024).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--heldout-fraction",
    type=float,
    default=0.2,
    show_default=True,
    help="Share of each file kept out of training and validation (for eval --heldout).",
)
@click.option("--val-fraction", type=float, default=0.1, show_default=True)
@click.option(
    "--path-scorer/--no-path-scorer",
    default=True,
    show_default=True,
    help="Also train the second-pass scorer that sees each entity's best path from a topic.",
)
@click.option(
    "--planner/--no-planner",
    default=True,
    show_default=True,
    help="Also train the planner that rates whole relation paths for the reader.",
)
@auto_hops_option
@store_options
@json_option
@pass_state
def train(
    state: CliState,
    files: tuple[Path, ...],
    fmt: str,
    out: Path | None,
    limit: int | None,
    epochs: int,
    patience: int,
    hidden: int,
    seed: int,
    heldout_fraction: float,
    val_fraction: float,
    path_scorer: bool,
    planner: bool,
    hops: str,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Train the triple scorer(s) and the extractive reader on question FILES.

    Weak labels are the triples on the gold relation path where the file names it (MetaQA
    qtype, PathQuestion/WC2014 paths, JSONL relation_paths), else on shortest topic -> answer paths.
    """
    loaded = resolve(state, {"store": store_overrides(backend, data_dir), "retrieval": {"checkpoint": out}})
    from dataclasses import replace

    from kgqa.eval.splits import SplitSettings
    from kgqa.pipeline import subgraph_settings
    from retriever_training.run import run_training
    from retriever_training.train import TrainSettings

    subgraph = subgraph_settings(loaded.settings)
    auto = hops == "auto"
    if not auto:
        subgraph = replace(subgraph, hops=int(hops))
    report = run_training(
        loaded.settings,
        [(f, fmt) for f in files],
        loaded.settings.checkpoint_path,
        subgraph=subgraph,
        auto_hops=auto,
        split=SplitSettings(heldout_fraction, val_fraction, seed),
        train_settings=TrainSettings(
            epochs=epochs,
            patience=patience,
            scorer_hidden=hidden,
            reader_hidden=hidden,
            seed=seed,
            path_scorer=path_scorer,
            planner=planner,
        ),
        limit=limit,
        progress=not as_json,
    )
    if as_json:
        emit_json(report.to_dict())
        return
    s, r = report.scorer_history, report.reader_history
    click.echo(f"questions {report.questions}, examples {report.examples}")
    click.echo(f"triple scorer: best {s['metric']} {max(s['val_metric']):.4f} at epoch {s['best_epoch']}")
    for name, h in (("path scorer", report.path_scorer_history), ("planner", report.planner_history)):
        if h:
            click.echo(f"{name}: best {h['metric']} {max(h['val_metric']):.4f} at epoch {h['best_epoch']}")
    click.echo(f"extractive reader: best hit@1 {max(r['val_metric']):.4f} at epoch {r['best_epoch']}")
    click.echo(f"checkpoint: {report.out}  ({', '.join(f'{k} {v:.0f}s' for k, v in report.seconds.items())})")


@click.command(name="eval")
@click.argument("questions_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(QUESTION_FORMATS), required=True)
@click.option(
    "--limit", type=int, help="Evaluate a fixed pseudo-random sample of N questions (same N, same questions)."
)
@click.option(
    "--lines",
    "lines_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File of 0-based line numbers to keep (e.g. qa_dev_consistent_idx.txt).",
)
@click.option("--heldout", is_flag=True, help="Keep only the checkpoint's held-out part of the file.")
@auto_hops_option
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Per-question JSONL log (default eval-<file stem>.jsonl); a re-run resumes from it.",
)
@click.option("--restart", is_flag=True, help="Overwrite the log instead of resuming from it.")
@click.option("--concurrency", type=int, help="LLM requests in flight (reader.concurrency, default 4).")
@click.option("--dry-run", is_flag=True, help="Print the resolved configuration and exit.")
@answer_options
@store_options
@json_option
@pass_state
def evaluate(
    state: CliState,
    questions_file: Path,
    fmt: str,
    limit: int | None,
    lines_file: Path | None,
    heldout: bool,
    hops: str,
    log_path: Path | None,
    restart: bool,
    concurrency: int | None,
    dry_run: bool,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Answer QUESTIONS_FILE with the configured reader and score retrieval and answers.

    \b
    Examples:
      kgqa eval qa_dev.txt --format metaqa --heldout --limit 300
      kgqa eval qa_dev.txt --format metaqa --reader llm --organisation chains --concurrency 8
    """
    overrides = answer_overrides(opts)
    overrides["reader"]["concurrency"] = concurrency
    loaded = resolve(state, {"store": store_overrides(backend, data_dir), **overrides})
    if dry_run:
        emit_json(redacted(loaded.settings))
        return
    from kgqa.eval.session import run_eval

    summary = run_eval(
        loaded.settings,
        questions_file,
        fmt,
        limit=limit,
        lines_file=lines_file,
        heldout=heldout,
        hops=hops,
        log_path=log_path or Path(f"eval-{questions_file.stem}.jsonl"),
        restart=restart,
        progress=not as_json,
    )
    if as_json:
        emit_json(summary.to_dict())
    else:
        click.echo(summary.render())
