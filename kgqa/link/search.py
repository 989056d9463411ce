"""The fallback steps, where no name matched: the full-text index over the content words, then
the nearest entity embeddings to the question."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kgqa.embed.protocol import Embedder
from kgqa.link.result import SCORE_FALLBACK_MAX, entity, unique
from kgqa.link.tokens import Token, content_words, escape_lucene
from kgqa.linking_words import popularity
from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import LinkedEntity

FULLTEXT_LIMIT = 200  # full-text hits re-scored per question (common words crowd out a misspelt name)
MIN_VECTOR_SCORE = 0.8  # Neo4j-scale similarity below which a vector neighbour is not a match (cos < 0.6:
# with all-MiniLM-L6-v2, gibberish such as "zzzxqv qqqq" is within cos 0.59 of some short MetaQA name)

EmbedderSource = Embedder | Callable[[], Embedder]
"""An embedder, or a zero-argument factory called only when the vector step runs."""


def _fulltext_rows(store: GraphStore, words: Sequence[str], limit: int) -> list[dict[str, Any]]:
    """Full-text rows (``link_fulltext``) for the question's content ``words``, positive scores
    only, best first."""
    if not words:
        return []
    rows = store.run(
        queries.get("link_fulltext"), {"query": " ".join(escape_lucene(w) for w in words), "limit": limit}
    )
    return sorted((r for r in rows if r["score"] is not None and r["score"] > 0), key=lambda r: -r["score"])


def link_fulltext(store: GraphStore, tokens: Sequence[Token], *, limit: int) -> tuple[LinkedEntity, ...]:
    """Full-text hits for the question's content words, best first, scaled into
    (0, ``SCORE_FALLBACK_MAX``] by the best hit; one mention (the words) for all."""
    words = content_words(tokens)
    rows = _fulltext_rows(store, words, limit)
    if not rows:
        return ()
    top = rows[0]["score"]
    mention = " ".join(words)
    return unique(entity(r, SCORE_FALLBACK_MAX * r["score"] / top, mention, "fulltext") for r in rows)


def link_fulltext_covering(
    store: GraphStore, tokens: Sequence[Token], *, limit: int
) -> tuple[LinkedEntity, ...]:
    """Full-text hits ranked by how many of the question's content words their name holds, then
    by the popularity prior (log(1 + degree)), scored into (0, ``SCORE_FALLBACK_MAX``] by both:
    the fallback step where no name matched.

    Why: full-text relevance favours short names, so "what religions are in the united states"
    found United States Senator (3 words, degree 7) before United States of America (4 words,
    degree 2,421); both hold the question's two name words, and the one people ask about is the
    better connected (docs/decisions.md).
    """
    words = content_words(tokens)
    rows = _fulltext_rows(store, words, limit)
    if not rows:
        return ()
    wanted = {normalise_name(w) for w in words}
    covered = [len(wanted & set(normalise_name(r["name"] or r["id"]).split())) for r in rows]
    prior = [popularity(r["degree"]) for r in rows]
    most, best = max(covered) or 1, max(prior) or 1.0
    mention = " ".join(words)
    order = sorted(range(len(rows)), key=lambda i: (-covered[i], -prior[i]))
    return unique(
        entity(
            rows[i], SCORE_FALLBACK_MAX * covered[i] / most * (1 + prior[i] / best) / 2, mention, "fulltext"
        )
        for i in order
    )


def link_vector(
    store: GraphStore,
    embedder: EmbedderSource,
    question: str,
    tokens: Sequence[Token],
    *,
    k: int,
    min_score: float,
) -> tuple[LinkedEntity, ...]:
    """The entities nearest the question's embedding with a score of at least ``min_score``
    (Neo4j scale), best first, scaled into (0, ``SCORE_FALLBACK_MAX``]; the model is loaded only
    when the question has a content word."""
    if not content_words(tokens):
        return ()  # nothing in the question could name an entity; skip loading the model
    model = embedder if isinstance(embedder, Embedder) else embedder()
    vector = model.embed([question])[0].tolist()
    rows = store.run(queries.get("link_vector"), {"embedding": vector, "k": k})
    rows = sorted((r for r in rows if r["score"] >= min_score), key=lambda r: -r["score"])
    return unique(entity(r, SCORE_FALLBACK_MAX * r["score"], question, "vector") for r in rows)
