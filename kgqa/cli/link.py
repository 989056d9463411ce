"""``kgqa link``: show which store entities a question is linked to."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import emit_json, json_option, resolve, store_options, store_overrides

if TYPE_CHECKING:
    from kgqa.embed.protocol import Embedder
    from kgqa.link import LinkResult


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
@store_options
@json_option
@pass_state
def link(
    state: CliState,
    question: str,
    topics: tuple[str, ...],
    k: int,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Link QUESTION to store entities and print the ranked candidates.

    Tries explicit --topic ids, then [bracketed] names, then exact name n-grams, then full-text,
    then vector similarity (the embedding model is loaded only for that last step).

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

        def checked_embedder() -> Embedder:  # loaded only if linking reaches the vector step
            embedder = make_embedder(settings.embedder)
            check_query_embedder(store, EmbeddingMeta(embedder.model_id, embedder.dimension))
            return embedder

        result = link_question(store, checked_embedder, question, topic_ids=topics, k=k)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(_render(result))


def _render(result: LinkResult) -> str:
    topics = {c.id for c in result.topics}
    lines = [f"{'':2}{'score':>6}  {'method':<8}  {'id':<30}  {'name':<30}  mention"]
    for cand in result.candidates:
        mark = "*" if cand.id in topics else ""
        lines.append(
            f"{mark:2}{cand.score:6.3f}  {cand.method:<8}  {cand.id:<30}  {cand.name:<30}  {cand.mention}"
        )
    lines.append(f"(* = topic; {len(result.candidates)} candidates)")
    return "\n".join(lines)
