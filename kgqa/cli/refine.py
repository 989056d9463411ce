"""``kgqa refine``: choose each training question's relation paths among its topic -> answer walks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import (
    QUESTION_FORMATS,
    config_flag,
    emit_json,
    hops_flag,
    json_option,
    question_file_overrides,
    resolve,
    store_options,
    store_overrides,
)


def _refine_flags(func: Any) -> Any:
    """The flags kept hidden from before ``--set``: the ``refine.*`` key of each name, and the
    LLM judge's ``reader.*`` keys; ``None`` when not given."""
    flags = [
        config_flag("--extra-steps", key="refine.extra_steps", type=int),
        config_flag("--rounds", key="refine.rounds", type=int),
        config_flag("--prior", key="refine.prior", type=float),
        config_flag("--neighbours", key="refine.neighbours", type=int),
        config_flag("--text", key="refine.text", type=float),
        config_flag("--ensemble", key="refine.ensemble", type=int),
        config_flag("--margin", key="refine.margin", type=float),
        config_flag("--folds", key="refine.folds", type=int),
        config_flag("--epochs", key="refine.epochs", type=int),
        config_flag("--seed", key="refine.seed", type=int),
        config_flag("--cache", key="refine.cache", type=click.Path(dir_okay=False, path_type=Path)),
        config_flag("--concurrency", "concurrency", key="reader.concurrency", type=int),
        config_flag(
            "--llm-backend",
            "llm_backend",
            key="reader.backend",
            type=click.Choice(["openai", "transformers", "vllm"]),
        ),
        config_flag("--model", "model", key="reader.model"),
        config_flag("--base-url", "base_url", key="reader.base_url"),
    ]
    for flag in reversed(flags):
        func = flag(func)
    return func


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(QUESTION_FORMATS), required=True, help="Question file format."
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Refined questions, as rog-jsonl with relation_paths (train with --format rog-jsonl).",
)
@click.option(
    "--judge",
    type=click.Choice(["planner", "llm"]),
    help="planner (self-training, no LLM; the default) or llm: ReG's prompt through the configured "
    "reader backend (refine.judge).",
)
@click.option("--limit", type=int, help="Refine a fixed pseudo-random sample of N questions.")
@_refine_flags
@hops_flag
@store_options
@json_option
@pass_state
def refine(
    state: CliState,
    file: Path,
    fmt: str,
    out: Path,
    judge: str | None,
    limit: int | None,
    concurrency: int | None,
    llm_backend: str | None,
    model: str | None,
    base_url: str | None,
    hops: str | None,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
    **refine_flags: Any,
) -> None:
    """Refine the relation paths of the training questions in FILE (ReG's refined supervision).

    Each question's candidates are the relation paths of its topic -> answer walks in its
    subgraph (walks may pass back through the topic: 'kgqa train' decides from the kept paths
    whether its walks may); the judge keeps those that answer it. Relation paths FILE names are ignored.
    The output is FILE as rog-jsonl with relation_paths filled in, for 'kgqa train'. The judge's
    settings are the [refine] config keys (e.g. --set refine.rounds=0), the LLM's reader.*:

    \b
      kgqa refine train.jsonl --format rog-jsonl --out refined.jsonl            # no LLM
      kgqa refine train.jsonl --format rog-jsonl --out refined.jsonl --judge llm \\
          --set reader.base_url=http://localhost:8000/v1 --set reader.model=my-model
      kgqa train refined.jsonl --format rog-jsonl
    """
    from kgqa.pipeline import subgraph_settings
    from retriever_training.refine import PlannerRefineSettings, run_refine

    reader = {"backend": llm_backend, "model": model, "base_url": base_url, "concurrency": concurrency}
    loaded = resolve(
        state,
        {
            "store": store_overrides(backend, data_dir),
            "reader": reader,
            "refine": {"judge": judge, **refine_flags},
            **question_file_overrides(hops, None),
        },
    )
    settings = loaded.settings
    r = settings.refine
    report = run_refine(
        settings,
        file,
        fmt,
        out,
        judge=r.judge,
        subgraph=subgraph_settings(settings),
        oracle_hops=settings.questions.oracle_hops,
        planner_settings=PlannerRefineSettings.from_config(r),
        extra_steps=r.extra_steps,
        cache_path=r.cache or out.with_name(out.name + ".judgements.jsonl"),
        limit=limit,
        progress=not as_json,
    )
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(
        f"questions {report.questions}, prepared {report.prepared}, with a choice {report.choice_questions}"
    )
    click.echo(
        f"candidates {report.candidates}, kept {report.kept}; questions by kept paths {report.kept_histogram}"
    )
    for i, done in enumerate(report.rounds, start=1):
        click.echo(f"round {i}: kept {done['kept']:.0f}, planner val gold mass {done['val_gold_mass']:.4f}")
    if report.llm:
        click.echo(f"llm: {report.llm}")
    w = report.walk_rule
    rule = "may pass back through the topic" if w["topic_walks"] else "never back through the topic"
    click.echo(
        f"walk rule kgqa train will learn: {rule} ({w['returning']} of {w['questions']} questions return)"
    )
    click.echo(f"wrote {report.out}  ({', '.join(f'{k} {v:.0f}s' for k, v in report.seconds.items())})")
