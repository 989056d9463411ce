"""``kgqa ask`` and ``kgqa show``: answer a question with evidence, save it, reopen it in Browser."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from kgqa.cli import CliState, echo_error, pass_state
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
    from kgqa.errors import KgqaError
    from kgqa.pipeline import AskMode


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
@config_flag("--top-k", key="answer.max_answers", type=click.IntRange(min=1))
@click.option(
    "--planner",
    type=click.Choice(["trained", "llm"]),
    hidden=True,
    default="trained",
    show_default=True,
    help="MoR: who plans; llm uses the reader backend (reader.backend, reader.base_url, reader.model).",
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
    mode: AskMode,
    top_k: int | None,
    planner: str,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Answer QUESTION from the knowledge graph and show the evidence paths behind the answer.

    A KGQA checkpoint and a MoR one (text-rich typed graphs, trained on a stark file) answer in
    the same layout and the same JSON keys; the checkpoint's kind decides which answers.

    QUESTION "-" reads questions from stdin, one a line, and answers each as it comes, the
    graph and models opened once (with --json: one JSON object a line). A question no entity
    matches gets its error in its place and the rest go on; the exit code is then 1.

    \b
    Examples:
      kgqa ask "which films did [Robert Zemeckis] direct"
      kgqa ask "who directed Forrest Gump" --set answer.organisation=chains --save
      kgqa ask - --json < questions.txt > answers.jsonl
      kgqa ask "..." --reader llm --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
      kgqa ask "Which genes are associated with both pain and ..." --checkpoint mor.pt --save
    """
    overrides = answer_overrides(opts)
    overrides["answer"]["max_answers"] = top_k
    loaded = resolve(state, {"store": store_overrides(backend, data_dir), **overrides})
    from kgqa.errors import LinkingError, StoreMemoryError
    from kgqa.pipeline import model_origin, open_question_asker
    from kgqa.saved_questions import browser_cypher, save_answer
    from kgqa.store import graph_mapping

    settings = loaded.settings
    many = question == "-"
    failed = 0
    with open_question_asker(settings, mode=mode, mor_planner=planner) as asker:
        model = model_origin(settings)
        for text in _stdin_questions() if many else [question]:
            try:
                answer = asker.ask(text, topic_ids=topics, hops=hops)
            except (LinkingError, StoreMemoryError) as exc:  # this question's, not the graph's
                if not many:
                    raise
                failed += 1
                _report_failure(text, exc, as_json)
                continue
            if save:
                answer = save_answer(asker.store, answer, link_entities=link_entities)
            cypher = None
            if answer.question_id:  # saved: the Browser query reads the graph's mapping
                cypher = browser_cypher(answer.question_id, graph_mapping(settings.store))
            shown = {**answer.to_dict(), "model": model, "browser_cypher": cypher}
            if as_json and many:
                click.echo(json.dumps(shown, default=str))
            elif as_json:
                emit_json(shown)
            else:
                _render_all(answer, settings.answer.max_answers, model, cypher, heading=many)
    if failed:
        sys.exit(1)


def _stdin_questions() -> Iterator[str]:
    """The questions on stdin, one a line, blank lines skipped, read as they come (a person
    typing at a terminal gets each answer before the next question)."""
    stream = sys.stdin
    if stream.isatty():
        click.echo("one question a line; end with Ctrl-D", err=True)
    for line in stream:
        if line.strip():
            yield line.strip()


def _report_failure(question: str, exc: KgqaError, as_json: bool) -> None:
    """A question of ``kgqa ask -`` that could not be answered, in its place in the output."""
    if as_json:
        click.echo(json.dumps({"question": question, "error": str(exc), "hint": exc.hint}))
        return
    click.echo(f"question: {question}")
    echo_error(exc, err=False)
    click.echo()


def _render_all(answer: Answer, max_answers: int, model: str, cypher: str | None, *, heading: bool) -> None:
    """:func:`_render`'s answer, then the model line, the train-free note and the Browser query;
    headed by the question where ``kgqa ask -`` answers many."""
    if heading:
        click.echo(f"question: {answer.question}")
    _render(answer, max_answers)
    click.echo(f"model: {model}")
    if answer.reader == "train-free":
        from kgqa.reasoning.plan_reader import NOTICE

        click.echo(f"note: {NOTICE}")
    if cypher:
        click.echo(f"\nsaved as {answer.question_id}; to see the evidence in Neo4j Browser paste:\n")
        click.echo(cypher)
    if heading:
        click.echo()


def _render(answer: Answer, max_answers: int) -> None:
    """The one layout of an answer, whichever checkpoint gave it: topics, plans, evidence (best
    last; lines scoring 0.000 are counted, not listed, where others score), their count where
    the question asks how many, answers, and the timings on stderr."""
    click.echo("topics: " + ", ".join(f"{t.name} ({t.method}, {t.score:.2f})" for t in answer.topics))
    if answer.disambiguation is not None:
        click.echo(render_disambiguation(answer.disambiguation))
    for plan in answer.plans:
        followed = "  (the answers' plan)" if plan.followed and len(answer.plans) > 1 else ""
        click.echo(f"plan: {plan.text}  p={plan.probability:.3f}{followed}")
    click.echo(f"evidence ({len(answer.evidence)} lines, best last):")
    scored = [line for line in answer.evidence if round(line.score, 3) > 0]
    shown = scored or answer.evidence  # the train-free path scores only what its plans cross
    if hidden := len(answer.evidence) - len(shown):
        click.echo(f"  ... {hidden} lines scoring 0.000 not shown (--json lists all)")
    for line in shown:
        click.echo(f"  {line.score:.3f}  {line.text}")
    if answer.abstained:
        click.echo(f"answer ({answer.reader}): not available (the reader abstained)")
    if answer.count is not None:
        click.echo(f"count: {answer.count} (how many: the answers below)")
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
