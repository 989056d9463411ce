"""The steps that take what the question states outright: topic ids and ``[bracketed]`` names."""

from __future__ import annotations

from collections.abc import Sequence

from kgqa.errors import EntityNotFoundError
from kgqa.link.exact import exact_rows, rank_rows
from kgqa.link.result import SCORE_BRACKET, SCORE_TOPIC, entity, interleave
from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import LinkedEntity


def link_topics(store: GraphStore, topic_ids: Sequence[str]) -> tuple[LinkedEntity, ...]:
    """Every given id as a ``topic`` candidate (score 1.0), in order, each once.

    Raises:
        EntityNotFoundError: an id is not in the store (ids are case-sensitive).
    """
    wanted = list(dict.fromkeys(topic_ids))
    rows = {r["id"]: r for r in store.run(queries.get("entities_names"), {"ids": wanted})}
    missing = [t for t in wanted if t not in rows]
    if missing:
        raise EntityNotFoundError(
            f"topic entity id(s) not in the store: {', '.join(repr(m) for m in missing)}",
            hint="ids are case-sensitive Entity.id values; check them with 'kgqa link' on the name",
        )
    return tuple(
        LinkedEntity(id=t, name=rows[t]["name"] or t, score=SCORE_TOPIC, mention="", method="topic")
        for t in wanted
    )


def link_brackets(store: GraphStore, spans: Sequence[str]) -> tuple[LinkedEntity, ...]:
    """Each bracketed span as an entity id, else as a normalised name (its rows in
    :func:`~kgqa.link.exact.rank_rows` order); the best of every span first.

    Raises:
        EntityNotFoundError: a span names no entity.
    """
    unique = list(dict.fromkeys(spans))
    by_id = {r["id"]: r for r in store.run(queries.get("entities_names"), {"ids": unique})}
    by_norm = exact_rows(store, {normalise_name(s) for s in unique if s not in by_id})
    found: list[list[LinkedEntity]] = []
    missing = []
    for span in unique:
        if span in by_id:
            row = by_id[span]
            found.append([entity(row, SCORE_BRACKET, span, "bracket")])
            continue
        rows = [row for row, _ in rank_rows(by_norm.get(normalise_name(span), []), span)]
        if not rows:
            missing.append(span)
        found.append([entity(r, SCORE_BRACKET, span, "bracket") for r in rows])
    if missing:
        raise EntityNotFoundError(
            f"no entity matches the bracketed name(s) {', '.join(repr(m) for m in missing)}",
            hint="check the spelling inside the brackets, or pass the entity id with --topic",
        )
    return interleave(found)
