"""``kgqa train``: train the triple scorer(s), the planner and the extractive reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import (
    QUESTION_FORMATS,
    emit_json,
    gold_paths_option,
    hops_option,
    json_option,
    resolve,
    store_options,
    store_overrides,
)
from kgqa.config import Settings


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(QUESTION_FORMATS), help="Question file format (needed with FILES)."
)
@click.option(
    "--from-graph",
    is_flag=True,
    help="Also train on questions generated from the graph itself (no labels needed; FILES optional). "
    "They are written to <data-dir>/from-graph/ and reused by a re-run.",
)
@click.option(
    "--graph-questions",
    type=click.IntRange(min=1),
    default=2000,
    show_default=True,
    help="With --from-graph: how many questions to generate.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Checkpoint to write.")
@click.option(
    "--limit",
    type=int,
    help="Use a fixed pseudo-random sample of N training (and N/3 validation) questions per file.",
)
@click.option("--epochs", type=int, default=8, show_default=True, help="Most epochs of each model.")
@click.option(
    "--patience",
    type=int,
    default=3,
    show_default=True,
    help="Early-stopping patience: epochs without a gain beyond the validation metric's standard "
    "error (no model stops before its third).",
)
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
@click.option(
    "--planner-kind",
    type=click.Choice(["auto", "mlp", "attention"]),
    default="mlp",
    show_default=True,
    help="Planner model: mlp (sentence embeddings, fast), attention (reads the question's word order), "
    "or auto (train both, keep the better validation plan accuracy).",
)
@click.option(
    "--planner-batch",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Questions per optimiser step of the planner, their losses averaged (1: SubgraphRAG's "
    "recipe, ~2.5x the planner's CPU).",
)
@click.option(
    "--reuse-scorers",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Take the triple scorer and second-pass scorer from this checkpoint (same store) and train "
    "only the planner and the reader.",
)
@click.option(
    "--val-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="stark: validation questions (early stopping); default: --val-fraction of FILES.",
)
@click.option(
    "--example-cache",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of prepared examples reused by a re-run on the same questions, KB and settings "
    "(default <data-dir>/example-cache).",
)
@click.option("--no-example-cache", is_flag=True, help="Prepare every example afresh and store none.")
@hops_option
@gold_paths_option
@store_options
@json_option
@pass_state
def train(
    state: CliState,
    files: tuple[Path, ...],
    fmt: str | None,
    from_graph: bool,
    graph_questions: int,
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
    planner_kind: str,
    planner_batch: int,
    reuse_scorers: Path | None,
    val_file: Path | None,
    example_cache: Path | None,
    no_example_cache: bool,
    hops: str,
    gold_paths: bool,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Train the triple scorer(s) and the extractive reader on question FILES.

    Weak labels are the triples on the gold relation path where the file names it (MetaQA
    qtype, PathQuestion/WC2014 paths, JSONL relation_paths), else on shortest topic -> answer paths.
    Without gold paths, 'kgqa refine' writes refined ones first (docs/guide.md: your own KG).

    With --format stark (text-rich typed graphs) it trains MoR instead: the typed planner on the
    files' metapath column and the trajectory reranker on their answers (--epochs, --patience,
    --seed apply; the checkpoint's kind tells 'kgqa ask' which path to take).

    With --from-graph, questions generated from the graph (relation paths of 1 to 3 steps from
    sampled entities, worded from the relation names, answers the ends of every walk) are
    trained on too, or alone without FILES.
    """
    if files and fmt is None:
        raise click.UsageError("--format is required with question FILES")
    if not files and not from_graph:
        raise click.UsageError("give question FILES, --from-graph, or both")
    if from_graph and fmt == "stark":
        raise click.UsageError("--from-graph makes questions for relation paths, not for --format stark")
    loaded = resolve(state, {"store": store_overrides(backend, data_dir), "retrieval": {"checkpoint": out}})
    if fmt == "stark":
        _train_mor(loaded.settings, files, val_file, limit, val_fraction, epochs, patience, seed, as_json)
        return
    from dataclasses import replace

    from kgqa.eval.splits import ORACLE_HOPS, SplitSettings
    from kgqa.pipeline import subgraph_settings
    from retriever_training.run import run_training
    from retriever_training.train import TrainSettings

    subgraph = subgraph_settings(loaded.settings)
    oracle = hops == ORACLE_HOPS
    if hops.isdigit():
        subgraph = replace(subgraph, hops=int(hops))
    cache_dir = example_cache or loaded.settings.store.data_dir / "example-cache"
    sources = [(f, fmt) for f in files] if fmt else []
    generated = None
    if from_graph:
        generated = _graph_questions(loaded.settings, graph_questions, seed, progress=not as_json)
        sources.append((Path(generated["path"]), "rog-jsonl"))
    report = run_training(
        loaded.settings,
        sources,
        loaded.settings.checkpoint_path,
        subgraph=subgraph,
        oracle_hops=oracle,
        split=SplitSettings(heldout_fraction, val_fraction, seed),
        train_settings=TrainSettings(
            epochs=epochs,
            patience=patience,
            scorer_hidden=hidden,
            reader_hidden=hidden,
            seed=seed,
            path_scorer=path_scorer,
            planner=planner,
            planner_kind=planner_kind,
            planner_batch=planner_batch,
        ),
        limit=limit,
        progress=not as_json,
        gold_paths=gold_paths,
        cache_dir=None if no_example_cache else cache_dir,
        reuse_scorers=reuse_scorers,
    )
    if as_json:
        emit_json({**report.to_dict(), **({"from_graph": generated} if generated else {})})
        return
    s, r = report.scorer_history, report.reader_history
    if generated:
        reused = " (reused)" if generated["cached"] else ""
        counts = f"{generated['questions']} questions by steps {generated['by_length']}"
        click.echo(f"from the graph{reused}: {counts} in {generated['path']}")
    click.echo(f"questions {report.questions}, examples {report.examples}")
    w = report.walk_rule
    rule = "may pass through and end at a topic" if w["topic_walks"] else "never back through a topic"
    click.echo(f"walk rule: {rule} ({w['returning']} of {w['questions']} training questions return)")
    if s:
        best = f"best {s['metric']} {max(s['val_metric']):.4f} at epoch {s['best_epoch']}"
        click.echo(f"triple scorer{' (reused)' if reuse_scorers else ''}: {best}")
    for name, h in (("path scorer", report.path_scorer_history), ("planner", report.planner_history)):
        if h:
            click.echo(f"{name}: best {h['metric']} {max(h['val_metric']):.4f} at epoch {h['best_epoch']}")
    if report.planner_history.get("candidates"):
        tried = ", ".join(f"{k} {v:.4f}" for k, v in report.planner_history["candidates"].items())
        click.echo(f"planner kinds by validation {report.planner_history['metric']}: {tried}")
    click.echo(f"extractive reader: best hit@1 {max(r['val_metric']):.4f} at epoch {r['best_epoch']}")
    click.echo(f"checkpoint: {report.out}  ({', '.join(f'{k} {v:.0f}s' for k, v in report.seconds.items())})")


def _graph_questions(settings: Settings, count: int, seed: int, *, progress: bool) -> dict[str, Any]:
    """Generate (or reuse) the questions of ``--from-graph``; their report as a dict."""
    from kgqa.store import open_store
    from retriever_training.from_graph import graph_questions_file

    with open_store(settings.store) as store:
        data_dir = settings.store.data_dir
        report = graph_questions_file(store, data_dir, count=count, seed=seed, progress=progress)
    return report.to_dict()


def _train_mor(
    settings: Settings,
    files: tuple[Path, ...],
    val_file: Path | None,
    limit: int | None,
    val_fraction: float,
    epochs: int,
    patience: int,
    seed: int,
    as_json: bool,
) -> None:
    from kgqa.eval.datasets import read_questions, sample, split_train_val
    from retriever_training.mor import MorTrainSettings, run_mor_training

    examples = [e for f in files for e in read_questions(f, "stark")]
    if val_file is not None:
        train_part, val_part = examples, list(read_questions(val_file, "stark"))
    else:
        train_part, val_part = split_train_val(examples, val_fraction=val_fraction, seed=seed)
    report = run_mor_training(
        settings,
        sample(train_part, limit, seed=seed),
        sample(val_part, limit, seed=seed),
        settings.checkpoint_path,
        train_settings=MorTrainSettings(reranker_epochs=epochs, patience=patience, seed=seed),
        progress=not as_json,
    )
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"questions {report.questions}, plans enumerated {report.plans}")
    click.echo(f"planner: validation accuracy {report.planner_val_accuracy:.4f}")
    click.echo(f"reranker: validation {_rates(report.reranker_val)} at epoch {report.best_epoch}")
    click.echo(f"untrained ranking: validation {_rates(report.heuristic_val)}")
    click.echo(f"checkpoint: {report.out}  ({', '.join(f'{k} {v:.0f}s' for k, v in report.seconds.items())})")


def _rates(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
