"""``kgqa train``: train the triple scorer(s), the planner and the extractive reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import (
    QUESTION_FORMATS,
    config_flag,
    emit_json,
    json_option,
    question_file_flags,
    question_file_overrides,
    resolve,
    store_options,
    store_overrides,
)
from kgqa.config import Settings


def _train_flags(func: Any) -> Any:
    """The flags kept hidden from before ``--set``, each for the ``train.*`` key of its name
    (``--no-example-cache``: ``train.cache_examples=false``); ``None`` when not given."""
    flags = [
        config_flag("--graph-questions", key="train.graph_questions", type=click.IntRange(min=1)),
        config_flag("--epochs", key="train.epochs", type=int),
        config_flag("--patience", key="train.patience", type=int),
        config_flag("--hidden", key="train.hidden", type=int),
        config_flag("--seed", key="train.seed", type=int),
        config_flag("--heldout-fraction", key="train.heldout_fraction", type=float),
        config_flag("--val-fraction", key="train.val_fraction", type=float),
        config_flag("--path-scorer/--no-path-scorer", key="train.path_scorer", default=None),
        config_flag("--planner/--no-planner", key="train.planner", default=None),
        config_flag(
            "--planner-kind", key="train.planner_kind", type=click.Choice(["auto", "mlp", "attention"])
        ),
        config_flag("--planner-batch", key="train.planner_batch", type=click.IntRange(min=1)),
        config_flag(
            "--reuse-scorers",
            key="train.reuse_scorers",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
        ),
        config_flag(
            "--example-cache", key="train.example_cache", type=click.Path(file_okay=False, path_type=Path)
        ),
        config_flag("--no-example-cache", key="train.cache_examples", is_flag=True, default=None),
    ]
    for flag in reversed(flags):
        func = flag(func)
    return func


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(QUESTION_FORMATS), help="Question file format (needed with FILES)."
)
@click.option(
    "--from-graph",
    is_flag=True,
    help="Also train the triple scorers (with --format stark: MoR's planner and reranker) on questions "
    "generated from the graph itself (no labels needed; FILES optional; how many: "
    "train.graph_questions). They are written to <data-dir>/from-graph/ and reused by a re-run.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Checkpoint to write.")
@click.option(
    "--limit",
    type=int,
    help="Use a fixed pseudo-random sample of N training (and N/3 validation) questions per file "
    "(not of --from-graph's, which train.graph_questions counts).",
)
@click.option(
    "--val-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="stark: validation questions (early stopping); default: train.val_fraction of FILES.",
)
@_train_flags
@question_file_flags
@store_options
@json_option
@pass_state
def train(
    state: CliState,
    files: tuple[Path, ...],
    fmt: str | None,
    from_graph: bool,
    out: Path | None,
    limit: int | None,
    val_file: Path | None,
    no_example_cache: bool | None,
    hops: str | None,
    gold_paths: bool | None,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
    **train_flags: Any,
) -> None:
    """Train the triple scorer(s) and the extractive reader on question FILES.

    Weak labels are the triples on the gold relation path where the file names it (MetaQA
    qtype, PathQuestion/WC2014 paths, JSONL relation_paths), else on shortest topic -> answer paths.
    Without gold paths, 'kgqa refine' writes refined ones first (docs/guide.md: your own KG).
    With fewer than train.reader_min_questions (150) labelled training questions no reader is
    trained: the ends of the path the planner likes best answer (a reader of so few read worse).

    With --format stark (text-rich typed graphs) it trains MoR instead: the typed planner on the
    files' metapath column and the trajectory reranker on their answers (train.epochs,
    train.patience, train.seed apply; the checkpoint's kind tells 'kgqa ask' which path to take).

    With --format stark --from-graph, MoR trains on typed plans generated from the graph (answer
    types, hops and named or described anchors walked on the graph, worded from its type and
    relation names, node names and texts; answers what the plan gives), with FILES or alone.

    With --from-graph, questions generated from the graph (relation paths of 1 to 3 steps from
    sampled entities, worded from the relation names, answers the ends of every walk) train the
    triple scorers too, or alone without FILES. The planner and the reader learn from FILES
    only; without FILES, plans and answers stay the relation-name match. With FILES, the
    scorers also train on FILES alone and the pair whose reader answers FILES' validation
    questions better is kept (FILES alone on a tie); below train.reader_min_questions
    labelled questions no reader is trained to weigh them, so the graph's are not used.

    Epochs, model sizes, the split and the optional models are the [train] config keys
    ('kgqa config show'), e.g. --set train.epochs=4 --set train.planner_kind=auto.
    """
    if files and fmt is None:
        raise click.UsageError("--format is required with question FILES")
    if not files and not from_graph:
        raise click.UsageError("give question FILES, --from-graph, or both")
    flags = {**train_flags, "cache_examples": False if no_example_cache else None}
    overrides = question_file_overrides(hops, gold_paths)
    loaded = resolve(
        state,
        {
            "store": store_overrides(backend, data_dir),
            "retrieval": {**overrides["retrieval"], "checkpoint": out},
            "questions": overrides["questions"],
            "train": flags,
        },
    )
    if fmt == "stark":
        _train_mor(loaded.settings, files, val_file, limit, as_json, from_graph=from_graph)
        return
    from retriever_training.run import train_configured

    settings = loaded.settings
    t = settings.train
    sources = [(f, fmt) for f in files] if fmt else []
    generated = None
    if from_graph:
        generated = _graph_questions(settings, t.graph_questions, t.seed, progress=not as_json)
        sources.append((Path(generated["path"]), "rog-jsonl"))
    report = train_configured(settings, sources, limit=limit, progress=not as_json)
    if as_json:
        emit_json({**report.to_dict(), **({"from_graph": generated} if generated else {})})
        return
    s, r = report.scorer_history, report.reader_history
    if generated:
        reused = " (reused)" if generated["cached"] else ""
        counts = f"{generated['questions']} questions by steps {generated['by_length']}"
        click.echo(f"from the graph{reused}: {counts} in {generated['path']}")
    click.echo(f"questions {report.questions}, examples {report.examples}")
    if report.graph_questions.get("used") is False:
        click.echo(
            "questions made from the graph: not used beside fewer than train.reader_min_questions "
            f"({t.reader_min_questions}) labelled training questions (no reader is trained to "
            "weigh their scorers against the labels' own)"
        )
    w = report.walk_rule
    rule = "may pass through and end at a topic" if w["topic_walks"] else "never back through a topic"
    click.echo(f"walk rule: {rule} ({w['returning']} of {w['questions']} training questions return)")
    if s:
        best = f"best {s['metric']} {max(s['val_metric']):.4f} at epoch {s['best_epoch']}"
        click.echo(f"triple scorer{' (reused)' if t.reuse_scorers else ''}: {best}")
    for name, h in (("path scorer", report.path_scorer_history), ("planner", report.planner_history)):
        if h:
            click.echo(f"{name}: best {h['metric']} {max(h['val_metric']):.4f} at epoch {h['best_epoch']}")
    if report.planner_history.get("candidates"):
        tried = ", ".join(f"{k} {v:.4f}" for k, v in report.planner_history["candidates"].items())
        click.echo(f"planner kinds by validation {report.planner_history['metric']}: {tried}")
    if r:
        click.echo(f"extractive reader: best hit@1 {max(r['val_metric']):.4f} at epoch {r['best_epoch']}")
    elif report.planner_history:
        click.echo(
            f"extractive reader: not trained on {report.examples.get('labelled_train', 0)} labelled "
            f"training questions (fewer than train.reader_min_questions, {t.reader_min_questions}); "
            "the likeliest plan's ends answer"
        )
    else:
        click.echo(
            "planner and reader: not trained on questions made from the graph alone; plans and "
            "answers by relation names matched with the question's words (labelled FILES train them)"
        )
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
    as_json: bool,
    *,
    from_graph: bool,
) -> None:
    """MoR training: ``train.epochs`` and ``train.patience`` bound the reranker; with
    ``from_graph``, ``train.graph_questions`` typed questions made from the graph join FILES'
    (and a share of them is held out for validation like FILES' when no --val-file is given)."""
    from kgqa.eval.datasets import read_questions, sample, split_train_val
    from retriever_training.mor import MorTrainSettings, run_mor_training

    t = settings.train
    examples = [e for f in files for e in read_questions(f, "stark")]
    generated = None
    if from_graph:
        generated, made = _typed_graph_questions(settings, progress=not as_json)
        examples += made
    if val_file is not None:
        train_part, val_part = examples, list(read_questions(val_file, "stark"))
    else:
        train_part, val_part = split_train_val(examples, val_fraction=t.val_fraction, seed=t.seed)
    report = run_mor_training(
        settings,
        sample(train_part, limit, seed=t.seed),
        sample(val_part, limit, seed=t.seed),
        settings.checkpoint_path,
        train_settings=MorTrainSettings(reranker_epochs=t.epochs, patience=t.patience, seed=t.seed),
        progress=not as_json,
    )
    if as_json:
        emit_json({**report.to_dict(), **({"from_graph": generated} if generated else {})})
        return
    if generated:
        reused = " (reused)" if generated["cached"] else ""
        click.echo(
            f"from the graph{reused}: {generated['questions']} questions on {generated['plans']} "
            f"metapaths, {len(generated['by_shape'])} shapes, in {generated['path']}"
        )
    click.echo(f"questions {report.questions}, plans enumerated {report.plans}")
    click.echo(f"planner: validation accuracy {report.planner_val_accuracy:.4f}")
    click.echo(f"reranker: validation {_rates(report.reranker_val)} at epoch {report.best_epoch}")
    click.echo(f"untrained ranking: validation {_rates(report.heuristic_val)}")
    click.echo(f"checkpoint: {report.out}  ({', '.join(f'{k} {v:.0f}s' for k, v in report.seconds.items())})")


def _typed_graph_questions(settings: Settings, *, progress: bool) -> tuple[dict[str, Any], list[Any]]:
    """Generate (or reuse) the typed questions of ``--format stark --from-graph``: their report
    as a dict, and the questions."""
    from kgqa.store import open_store
    from retriever_training.from_typed_graph import read_typed_questions, typed_questions_file

    t = settings.train
    with open_store(settings.store) as store:
        report = typed_questions_file(
            store, settings.store.data_dir, count=t.graph_questions, seed=t.seed, progress=progress
        )
    return report.to_dict(), read_typed_questions(Path(report.path))


def _rates(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
