"""``kgqa refine``: choose each training question's relation paths among its topic -> answer walks."""

from __future__ import annotations

from pathlib import Path

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import (
    QUESTION_FORMATS,
    emit_json,
    hops_flag,
    json_option,
    question_file_overrides,
    resolve,
    store_options,
    store_overrides,
)


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
    default="planner",
    show_default=True,
    help="planner: self-training, no LLM; llm: ReG's prompt through the configured reader backend.",
)
@click.option(
    "--extra-steps",
    type=int,
    help="Candidates: walks (which may pass back through the topic) at most this many steps "
    "longer than an answer's shortest walk (0: shortest walks only; default: any walk of up to "
    "the question's hops).",
)
@click.option(
    "--rounds",
    type=int,
    default=2,
    show_default=True,
    help="planner: hard-EM rounds (0: no training, the two priors and answer fit decide).",
)
@click.option(
    "--prior",
    type=float,
    default=1.0,
    show_default=True,
    help="planner: weight of the neighbour prior (what questions phrased alike keep; 0: none).",
)
@click.option(
    "--neighbours", type=int, default=10, show_default=True, help="planner: questions the prior reads."
)
@click.option(
    "--text",
    type=float,
    default=20.0,
    show_default=True,
    help="planner: weight (logits per unit of cosine) of the relation-name prior: the question, "
    "topic cut out, against the path's relation names in words (0: none).",
)
@click.option(
    "--ensemble",
    type=int,
    default=3,
    show_default=True,
    help="planner: planners (seeds SEED, SEED+1, ...) trained and averaged per round; more cost "
    "more but vary less from seed to seed.",
)
@click.option(
    "--margin",
    type=float,
    default=0.5,
    show_default=True,
    help="planner: keep candidates within this many logits of the question's best.",
)
@click.option(
    "--folds",
    type=int,
    default=1,
    show_default=True,
    help="planner: cross-fitting folds (each question rated by a planner trained on the others).",
)
@click.option("--epochs", type=int, default=8, show_default=True, help="planner: epochs per round.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--limit", type=int, help="Refine a fixed pseudo-random sample of N questions.")
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="llm: JSONL cache of every judgement (default <out>.judgements.jsonl); a re-run resumes.",
)
@click.option("--concurrency", type=int, help="llm: requests in flight (reader.concurrency, default 4).")
@click.option(
    "--llm-backend",
    type=click.Choice(["openai", "transformers", "vllm"]),
    help="llm: reader.backend (default from config: openai).",
)
@click.option("--model", help="llm: reader.model (served name, local path or hub id).")
@click.option("--base-url", help="llm: reader.base_url of an OpenAI-compatible server.")
@hops_flag
@store_options
@json_option
@pass_state
def refine(
    state: CliState,
    file: Path,
    fmt: str,
    out: Path,
    judge: str,
    extra_steps: int | None,
    rounds: int,
    prior: float,
    neighbours: int,
    text: float,
    ensemble: int,
    margin: float,
    folds: int,
    epochs: int,
    seed: int,
    limit: int | None,
    cache_path: Path | None,
    concurrency: int | None,
    llm_backend: str | None,
    model: str | None,
    base_url: str | None,
    hops: str | None,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Refine the relation paths of the training questions in FILE (ReG's refined supervision).

    Each question's candidates are the relation paths of its topic -> answer walks in its
    subgraph (walks may pass back through the topic: 'kgqa train' decides from the kept paths
    whether its walks may); the judge keeps those that answer it. Relation paths FILE names are ignored.
    The output is FILE as rog-jsonl with relation_paths filled in, for 'kgqa train':

    \b
      kgqa refine train.jsonl --format rog-jsonl --out refined.jsonl            # no LLM
      kgqa refine train.jsonl --format rog-jsonl --out refined.jsonl --judge llm \\
          --base-url http://localhost:8000/v1 --model my-model
      kgqa train refined.jsonl --format rog-jsonl
    """
    from kgqa.pipeline import subgraph_settings
    from retriever_training.refine import PlannerRefineSettings, run_refine
    from retriever_training.train import TrainSettings

    reader = {"backend": llm_backend, "model": model, "base_url": base_url, "concurrency": concurrency}
    loaded = resolve(
        state,
        {
            "store": store_overrides(backend, data_dir),
            "reader": reader,
            **question_file_overrides(hops, None),
        },
    )
    report = run_refine(
        loaded.settings,
        file,
        fmt,
        out,
        judge="llm" if judge == "llm" else "planner",
        subgraph=subgraph_settings(loaded.settings),
        oracle_hops=loaded.settings.questions.oracle_hops,
        planner_settings=PlannerRefineSettings(
            rounds=rounds,
            margin=margin,
            folds=folds,
            prior=prior,
            neighbours=neighbours,
            text=text,
            ensemble=ensemble,
            train=TrainSettings(epochs=epochs, patience=3, seed=seed),
        ),
        extra_steps=extra_steps,
        cache_path=cache_path or out.with_name(out.name + ".judgements.jsonl"),
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
    for i, r in enumerate(report.rounds, start=1):
        click.echo(f"round {i}: kept {r['kept']:.0f}, planner val gold mass {r['val_gold_mass']:.4f}")
    if report.llm:
        click.echo(f"llm: {report.llm}")
    w = report.walk_rule
    rule = "may pass back through the topic" if w["topic_walks"] else "never back through the topic"
    click.echo(
        f"walk rule kgqa train will learn: {rule} ({w['returning']} of {w['questions']} questions return)"
    )
    click.echo(f"wrote {report.out}  ({', '.join(f'{k} {v:.0f}s' for k, v in report.seconds.items())})")
