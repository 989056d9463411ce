"""The fallback steps, where no name matched: the full-text index over the content words, then
the nearest entity embeddings to the question."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgqa.embed.protocol import Embedder
from kgqa.link.result import SCORE_FALLBACK_MAX, entity, unique
from kgqa.link.tokens import Token, content_words, escape_lucene
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import LinkedEntity

FULLTEXT_LIMIT = 200  # full-text hits re-scored per question (common words crowd out a misspelt name)
MIN_VECTOR_SCORE = 0.8  # Neo4j-scale similarity below which a vector neighbour is not a match (cos < 0.6:
# with all-MiniLM-L6-v2, gibberish such as "zzzxqv qqqq" is within cos 0.59 of some short MetaQA name)

EmbedderSource = Embedder | Callable[[], Embedder]
"""An embedder, or a zero-argument factory called only when the vector step runs."""


def link_fulltext(store: GraphStore, tokens: Sequence[Token], *, limit: int) -> tuple[LinkedEntity, ...]:
    """Full-text hits for the question's content words, best first, scaled into
    (0, ``SCORE_FALLBACK_MAX``] by the best hit; one mention (the words) for all."""
    words = content_words(tokens)
    if not words:
        return ()
    rows = store.run(
        queries.get("link_fulltext"), {"query": " ".join(escape_lucene(w) for w in words), "limit": limit}
    )
    rows = [r for r in rows if r["score"] is not None and r["score"] > 0]
    if not rows:
        return ()
    top = max(r["score"] for r in rows)
    mention = " ".join(words)
    rows.sort(key=lambda r: -r["score"])
    return unique(entity(r, SCORE_FALLBACK_MAX * r["score"] / top, mention, "fulltext") for r in rows)


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
