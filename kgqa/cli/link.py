"""``kgqa link``: show which store entities a question is linked to."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import (
    emit_json,
    json_option,
    render_disambiguation,
    resolve,
    store_options,
    store_overrides,
)

if TYPE_CHECKING:
    from kgqa.embed.protocol import Embedder
    from kgqa.link import LinkResult
    from kgqa.retrieval.disambiguation import Disambiguation


@click.command()
@click.argument("question")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="ID",
    help="Entity id to use as a topic (repeatable); skips linking but checks the ids exist.",
)
@click.option("--k", type=click.IntRange(min=1), default=5, show_default=True, help="Vector neighbours.")
@click.option(
    "--fit/--no-fit",
    default=True,
    show_default=True,
    help="Weigh close candidates by their fit to the question with the trained retriever "
    "(when the checkpoint exists).",
)
@store_options
@json_option
@pass_state
def link(
    state: CliState,
    question: str,
    topics: tuple[str, ...],
    k: int,
    fit: bool,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Link QUESTION to store entities and print the ranked candidates.

    Tries explicit --topic ids, then [bracketed] names, then exact and fuzzy names (case, typos),
    then full-text, then vector similarity (the embedding model is loaded only for that last
    step). When several candidates are close, the trained retriever (if the checkpoint exists)
    retrieves each as the topic and the one whose neighbourhood fits the question best wins;
    the runner-up and the margin are shown.

    \b
    Example:
      kgqa link "what movies did Tom Hanks star in"
    """
    loaded = resolve(state, {"store": store_overrides(backend, data_dir)})
    from kgqa.embed import make_embedder
    from kgqa.link import link as link_question
    from kgqa.store import open_store
    from kgqa.store.schema import check_query_embedder
    from kgqa.types import EmbeddingMeta

    settings = loaded.settings
    with open_store(settings.store) as store:

        def checked_embedder() -> Embedder:
            embedder = make_embedder(settings.embedder)
            check_query_embedder(store, EmbeddingMeta(embedder.model_id, embedder.dimension))
            return embedder

        # Loaded, as `ask` holds it: questions read acronyms and relation words with the model.
        embedder = checked_embedder if topics else checked_embedder()
        result = link_question(store, embedder, question, topic_ids=topics, k=k)
    disambiguation = None
    if fit and len(result.contenders()) > 1 and settings.checkpoint_path.is_file():
        from kgqa.pipeline import open_retriever

        with open_retriever(settings) as retriever:
            disambiguation = retriever.retrieve(question, topic_ids=topics).disambiguation
    if as_json:
        data = result.to_dict()
        data["runner_up"] = _runner_up(result)
        data["disambiguation"] = disambiguation.to_dict() if disambiguation is not None else None
        emit_json(data)
    else:
        click.echo(_render(result, disambiguation))


def _runner_up(result: LinkResult) -> dict[str, object] | None:
    """The closest contender to the first topic, with the link-score margin between them."""
    contenders = result.contenders()
    if len(contenders) < 2:
        return None
    return {"id": contenders[1].id, "margin": round(contenders[0].score - contenders[1].score, 6)}


def _render(result: LinkResult, disambiguation: Disambiguation | None) -> str:
    topics = {c.id for c in result.topics}
    lines = [f"{'':2}{'score':>6}  {'method':<8}  {'id':<30}  {'name':<30}  mention"]
    for cand in result.candidates:
        mark = "*" if cand.id in topics else ""
        lines.append(
            f"{mark:2}{cand.score:6.3f}  {cand.method:<8}  {cand.id:<30}  {cand.name:<30}  {cand.mention}"
        )
    lines.append(f"(* = topic; {len(result.candidates)} candidates)")
    runner_up = _runner_up(result)
    if disambiguation is not None:
        lines.append(render_disambiguation(disambiguation))
    elif runner_up is not None:
        lines.append(
            f"runner-up {runner_up['id']}, link-score margin {runner_up['margin']:.3f} "
            "(train a retriever to weigh them by fit)"
        )
    return "\n".join(lines)
