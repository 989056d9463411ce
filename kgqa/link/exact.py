"""Exact name lookup: the entities whose normalised name equals a mention's, ordered by how
closely their written name matches it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kgqa.link.tokens import ARTICLES, case_key, is_proper
from kgqa.store import queries
from kgqa.store.protocol import GraphStore

_EXACT_ROWS_PER_NAME = 8  # link_exact row cap per looked-up n-gram (titles and tags repeat names)


def exact_rows(store: GraphStore, norms: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """``link_exact`` rows for all normalised names in one call, grouped by ``name_norm``."""
    names = sorted(set(norms))
    if not names:
        return {}
    rows = store.run(queries.get("link_exact"), {"names_norm": names, "limit": _EXACT_ROWS_PER_NAME})
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["name_norm"], []).append(row)
    return grouped


def rank_rows(
    rows: Sequence[dict[str, Any]], mention: str, *, raw: str = "", uncased: bool = False, article: str = ""
) -> list[tuple[dict[str, Any], tuple[bool, ...]]]:
    """Order the entities sharing one normalised name by how closely their name matches the mention,
    each with its cue: the part of the order the question's text decides, so rows with equal cues
    are twins the text cannot tell apart (disambiguation weighs them).

    Identical text first, edge punctuation included ("Moulin Rouge!" over "Moulin Rouge" in
    "who directed Moulin Rouge!", the reverse in "who directed Moulin Rouge?"),
    then the same words in the same letter case ignoring punctuation, then the same case ignoring
    a leading article ("Fury" ~ "The Fury"); the rest by name. So the MetaQA tag "tom hanks" loses
    to the person "Tom Hanks" for the mention "Tom Hanks" and wins for the mention "tom hanks" in
    a question that capitalises names elsewhere. In a question without capitals (``uncased``) the
    mention's case says nothing, and names with capitals or digits come first ("tom hanks" ->
    the person; the tag is the runner-up that disambiguation weighs). Where the word before the
    mention is an ``article``, names that start with it come next ("the girl" -> The Girl, not
    Girl; "the haunted house" -> The Haunted House, not A Haunted House), and without one, names
    without one ("the film loft" -> Loft, not The Loft). In an uncased question only the article
    is a cue.
    """
    full, bare = case_key(mention), case_key(mention, bare=True)

    prefix = f"{article} " if article in ARTICLES else ""

    def key(row: dict[str, Any]) -> tuple[bool, bool, bool, bool, bool, bool, str, str]:
        name = row["name"] or row["id"]
        starts_with_article = name.split(" ", 1)[0].lower() in ARTICLES
        return (
            uncased and not is_proper(name),
            not name.lower().startswith(prefix) if prefix else starts_with_article and bool(mention),
            name != raw,
            name != mention,
            case_key(name) != full,
            case_key(name, bare=True) != bare,
            name,
            row["id"],
        )

    keyed = sorted(((key(row), row) for row in rows), key=lambda kr: kr[0])
    return [(row, k[1:2] if uncased else k[1:-2]) for k, row in keyed]
