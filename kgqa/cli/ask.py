"""``kgqa ask`` and ``kgqa show``: answer a question with evidence, save it, reopen it in Browser."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import (
    F,
    checkpoint_option,
    config_flag,
    emit_json,
    json_option,
    question_options,
    render_disambiguation,
    resolve,
    store_options,
    store_overrides,
)

if TYPE_CHECKING:
    from kgqa.answer import Answer
    from kgqa.config import Settings


def answer_options(*, reader_flags: bool = True) -> Callable[[F], F]:
    """Reader, pooling and organisation flags shared by ``ask`` and ``eval``.

    ``reader_flags``: show ``--reader``, ``--model`` and ``--base-url`` in ``--help`` (``ask``,
    where people try an LLM one question at a time); ``eval`` keeps them hidden, as flags for
    the ``reader.*`` keys its ``--set`` reaches, to stay a command one can hold in one's head.
    """

    def reader_option(decl: str, key: str, help: str, **kwargs: Any) -> Callable[[F], F]:
        if reader_flags:
            return click.option(decl, help=f"{help} ({key}).", **kwargs)
        return config_flag(decl, key=key, **kwargs)

    options = [
        reader_option(
            "--reader",
            "reader.kind",
            "Who answers: extractive (default) or llm",
            type=click.Choice(["extractive", "llm"]),
        ),
        config_flag(
            "--llm-backend", key="reader.backend", type=click.Choice(["openai", "transformers", "vllm"])
        ),
        reader_option("--model", "reader.model", "LLM model: served name (openai) or path / package"),
        reader_option("--base-url", "reader.base_url", "OpenAI-compatible endpoint", metavar="URL"),
        config_flag(
            "--organisation", key="answer.organisation", type=click.Choice(["triples", "chains", "paths"])
        ),
        config_flag(
            "--pooling", key="answer.pooling", type=click.Choice(["none", "dijkstra", "bfs", "random_walk"])
        ),
        config_flag("--evidence-k", key="answer.evidence_k", type=int),
        config_flag("--evidence-tokens", key="answer.evidence_tokens", type=int),
        config_flag(
            "--chain-selection", key="answer.chain_selection", type=click.Choice(["plans", "ranked"])
        ),
        checkpoint_option,
    ]

    def apply(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return apply


def answer_overrides(opts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Config overrides from the flags of :func:`answer_options`."""
    return {
        "reader": {
            "kind": opts.get("reader"),
            "backend": opts.get("llm_backend"),
            "model": opts.get("model"),
            "base_url": opts.get("base_url"),
        },
        "answer": {
            "organisation": opts.get("organisation"),
            "pooling": opts.get("pooling"),
            "evidence_k": opts.get("evidence_k"),
            "evidence_tokens": opts.get("evidence_tokens"),
            "chain_selection": opts.get("chain_selection"),
        },
        "retrieval": {"checkpoint": opts.get("checkpoint")},
    }


@click.command()
@click.argument("question")
@question_options
@click.option("--save", is_flag=True, help="Write the question and its evidence to the store.")
@click.option(
    "--link-entities",
    is_flag=True,
    hidden=True,  # docs/neo4j.md
    help="With --save: also link the saved question to its topic and answer nodes (KGQA_TOPIC / "
    "KGQA_ANSWER relationships on your nodes; without it nothing on them is written).",
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "kgqa", "mor"]),
    hidden=True,  # the checkpoint's kind decides; docs/guide.md (text-rich graphs)
    default="auto",
    show_default=True,
    help="KGQA (named entities, relation paths) or MoR (text-rich typed graphs); auto: the "
    "checkpoint's kind decides (a 'kgqa train --format stark' checkpoint is MoR).",
)
@click.option("--top-k", type=int, default=5, hidden=True, help="MoR: answers shown.")
@click.option(
    "--planner",
    type=click.Choice(["trained", "llm"]),
    hidden=True,
    default="trained",
    show_default=True,
    help="MoR: who plans; llm uses the reader backend (--llm-backend, --base-url, --model).",
)
@answer_options()
@store_options
@json_option
@pass_state
def ask(
    state: CliState,
    question: str,
    topics: tuple[str, ...],
    hops: int | None,
    save: bool,
    link_entities: bool,
    mode: str,
    top_k: int,
    planner: str,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Answer QUESTION from the knowledge graph and show the evidence paths behind the answer.

    \b
    Examples:
      kgqa ask "which films did [Robert Zemeckis] direct"
      kgqa ask "who directed Forrest Gump" --organisation chains --save
      kgqa ask "..." --reader llm --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
      kgqa ask "Which genes are associated with both pain and ..." --checkpoint mor.pt --save
    """
    loaded = resolve(state, {"store": store_overrides(backend, data_dir), **answer_overrides(opts)})
    from kgqa.pipeline import is_mor_checkpoint, model_origin, open_asker

    if mode == "mor" or (mode == "auto" and is_mor_checkpoint(loaded.settings)):
        _ask_mor(
            loaded.settings,
            question,
            top_k=top_k,
            planner=planner,
            save=save,
            link_entities=link_entities,
            as_json=as_json,
        )
        return
    from kgqa.saved_questions import browser_cypher, save_answer
    from kgqa.store import graph_mapping

    mapping = graph_mapping(loaded.settings.store)
    with open_asker(loaded.settings) as asker:
        answer = asker.ask(question, topic_ids=topics, hops=hops)
        if save:
            answer = save_answer(asker.retriever.store, answer, link_entities=link_entities)
    if as_json:
        saved = (
            {"browser_cypher": browser_cypher(answer.question_id, mapping)}
            if save and answer.question_id
            else {}
        )
        emit_json({**answer.to_dict(), "model": model_origin(loaded.settings), **saved})
        return
    _render(answer, loaded.settings.answer.max_answers)
    click.echo(f"model: {model_origin(loaded.settings)}")
    if answer.reader == "train-free":
        from kgqa.reasoning.plan_reader import NOTICE

        click.echo(f"note: {NOTICE}")
    if answer.question_id:
        click.echo(f"\nsaved as {answer.question_id}; to see the evidence in Neo4j Browser paste:\n")
        click.echo(browser_cypher(answer.question_id, mapping))


def _ask_mor(
    settings: Settings,
    question: str,
    *,
    top_k: int,
    planner: str,
    save: bool,
    link_entities: bool,
    as_json: bool,
) -> None:
    """The MoR path: answers are typed nodes with their best trajectories as evidence."""
    from kgqa.pipeline import open_mor_retriever
    from kgqa.retrieval.mor.traversal import node_rows
    from kgqa.saved_questions import browser_cypher, save_mor_result
    from kgqa.store import graph_mapping

    mapping = graph_mapping(settings.store)
    with open_mor_retriever(settings, planner=planner) as retriever:
        result = retriever.retrieve(question, top_k=top_k)
        qid = (
            save_mor_result(retriever.store, question, result, link_entities=link_entities) if save else None
        )
        names = {
            r["id"]: r["name"]
            for r in node_rows(
                retriever.store, [i for n in result.nodes for t in n.trajectories for i in t.nodes]
            )
        }
    if as_json:
        emit_json(
            {
                "question": question,
                "plan": str(result.plan),
                "plan_probability": result.plan_prob,
                "answers": [n.to_dict() for n in result.nodes],
                "timings_ms": result.timings_ms,
                **({"question_id": qid, "browser_cypher": browser_cypher(qid, mapping)} if qid else {}),
            }
        )
        return
    click.echo(f"plan (p={result.plan_prob:.2f}): {result.plan}")
    for node in result.nodes:
        click.echo(f"answer: {node.name} [{node.type} {node.id}]  score={node.score:.3f}")
        for t in node.trajectories:
            steps = [names.get(t.nodes[0], t.nodes[0])]
            for rel, target in zip(t.rel_types, t.nodes[1:], strict=True):
                steps += [f"-{rel}-", names.get(target, target)]
            how = "text match" if not t.rels else "traversal"
            click.echo(f"    {t.score:.3f}  ({how}) " + " ".join(steps))
    if qid:
        click.echo(f"\nsaved as {qid}; to see the evidence in Neo4j Browser paste:\n")
        click.echo(browser_cypher(qid, mapping))
    click.echo("timings ms: " + ", ".join(f"{s}={v:.1f}" for s, v in result.timings_ms.items()), err=True)


def _render(answer: Answer, max_answers: int) -> None:
    click.echo("topics: " + ", ".join(f"{t.name} ({t.method}, {t.score:.2f})" for t in answer.topics))
    if answer.disambiguation is not None:
        click.echo(render_disambiguation(answer.disambiguation))
    click.echo(f"evidence ({len(answer.evidence)} lines, best last):")
    for line in answer.evidence:
        click.echo(f"  {line.score:.3f}  {line.text}")
    if answer.abstained:
        click.echo(f"answer ({answer.reader}): not available (the reader abstained)")
    for a in answer.answers[:max_answers]:
        score = "" if a.score is None else f"  p={a.score:.3f}"
        flag = "" if a.grounded else "  [UNGROUNDED: not among the retrieved entities]"
        click.echo(f"answer ({answer.reader}): {a.name}{score}{flag}")
    if len(answer.answers) > max_answers:
        click.echo(f"... and {len(answer.answers) - max_answers} more (--json lists all; answer.max_answers)")
    click.echo("timings ms: " + ", ".join(f"{s}={v:.1f}" for s, v in answer.timings_ms.items()), err=True)


@click.command()
@click.argument("question_id")
@store_options
@json_option
@pass_state
def show(state: CliState, question_id: str, backend: str | None, data_dir: str | None, as_json: bool) -> None:
    """Reprint a question saved by 'kgqa ask --save' with its evidence and the Browser query."""
    loaded = resolve(state, {"store": store_overrides(backend, data_dir)})
    from kgqa.saved_questions import load_saved
    from kgqa.store import open_store

    with open_store(loaded.settings.store) as store:
        saved = load_saved(store, question_id)
    if as_json:
        emit_json(saved.to_dict())
        return
    click.echo(f"{saved.id}  asked {saved.asked_at}\nquestion: {saved.text}")
    click.echo("answers: " + ", ".join(saved.answers) if saved.answers else "answers: (none)")
    click.echo(f"evidence ({len(saved.evidence)} relationships):")
    for head, rel, tail in saved.evidence:
        click.echo(f"  ({head}) -[{rel}]-> ({tail})")
    click.echo("\nNeo4j Browser:\n\n" + saved.browser_cypher)
