"""``kgqa retrieve``: score a question's candidate triples and print the best."""

from __future__ import annotations

from pathlib import Path

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import (
    checkpoint_option,
    emit_json,
    json_option,
    question_options,
    resolve,
    store_options,
    store_overrides,
)


@click.command()
@click.argument("question")
@question_options
@click.option("--top-k", type=int, help="Triples to print (retrieval.top_k, default 100).")
@click.option(
    "--max-per-node",
    type=int,
    help="Triples one expanded entity gives per hop (retrieval.max_per_node, default 1000).",
)
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
    max_per_node: int | None,
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
            "retrieval": {
                "top_k": top_k,
                "hops": hops,
                "max_per_node": max_per_node,
                "checkpoint": checkpoint,
            },
        },
    )
    from kgqa.pipeline import open_extractive_reader, open_retriever
    from kgqa.retrieval.retriever import SHOWN_PLANS

    k = loaded.settings.retrieval.top_k
    with open_retriever(loaded.settings) as retriever:
        result = retriever.retrieve(question, topic_ids=topics)
        extracted = (
            open_extractive_reader(loaded.settings, retriever).extract_answers(result) if answers else []
        )
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
