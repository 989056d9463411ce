"""``link``: the steps in order, the first that finds candidates wins."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kgqa.errors import EntityNotFoundError
from kgqa.link.explicit import link_brackets, link_topics
from kgqa.link.name_step import link_names
from kgqa.link.result import LinkResult
from kgqa.link.search import (
    FULLTEXT_LIMIT,
    MIN_VECTOR_SCORE,
    EmbedderSource,
    link_fulltext_covering,
    link_vector,
)
from kgqa.link.tokens import EDGE_PUNCT, Token, tokenize
from kgqa.linking_words import RelationWords
from kgqa.store.protocol import GraphStore
from kgqa.types import ParsedQuestion

log = logging.getLogger(__name__)


def link(
    store: GraphStore,
    embedder: EmbedderSource,
    question: str | ParsedQuestion,
    *,
    topic_ids: Sequence[str] = (),
    k: int = 5,
    max_ngram: int = 16,
    fulltext_limit: int = FULLTEXT_LIMIT,
    min_vector_score: float = MIN_VECTOR_SCORE,
    relation_words: RelationWords | None = None,
) -> LinkResult:
    """Link a question to store entities.

    Steps, the first that finds anything wins: names (:func:`link_names`; where the question has
    capitals and the best mention holds none of them, the question is read again in lower case,
    with people's words: "What language do Jamaican people speak?" is about Jamaica, not The
    People Speak), the full-text index, the entity embeddings.

    Args:
        store: the graph store holding ``:Entity`` nodes with ``name_norm`` and the search indexes.
        embedder: the store's embedding model, or a factory for it; a loaded model also reads
            acronyms and forms of relation words in lower-case questions, a factory is called
            only by the vector step (reached when nothing else matched).
        question: the question, as text or parsed once by the caller; ``[bracketed]`` spans are
            taken as entity names or ids.
        topic_ids: explicit ``Entity.id`` values; when given, nothing else is tried.
        k: vector neighbours to fetch.
        max_ngram: longest word n-gram tried by the exact step.
        fulltext_limit: full-text hits to fetch.
        min_vector_score: vector neighbours below this Neo4j-scale score ((1 + cos) / 2) are dropped.
        relation_words: the words of the store's relation names; read from the store when None
            (one query; pass :meth:`RelationWords.from_store` once to link many questions).

    Returns:
        The candidates of the first step that found any, best first.

    Raises:
        EntityNotFoundError: a topic id or bracketed span does not exist, or nothing matched.

    Example:
        >>> link(store, embedder, "what movies did tom hanks star in").topics[0].id  # doctest: +SKIP
        'Tom Hanks'
    """
    if topic_ids:
        return LinkResult(link_topics(store, topic_ids))
    parsed = question if isinstance(question, ParsedQuestion) else ParsedQuestion.parse(question)
    if parsed.bracketed:
        return LinkResult(link_brackets(store, parsed.bracketed))
    question = parsed.asked
    tokens = tokenize(question)
    if not any(t.word for t in tokens):
        raise EntityNotFoundError(
            f"the question {question!r} has no words to link",
            hint="type a question that names an entity, or pass its id with --topic",
        )
    capitals = [t.text.strip(EDGE_PUNCT) for t in tokens if t.capitalised]

    def names(text: str, text_tokens: Sequence[Token]) -> LinkResult:
        return link_names(
            store,
            text,
            text_tokens,
            max_ngram=max_ngram,
            fulltext_limit=fulltext_limit,
            relation_words=relation_words,
            embedder=embedder,
        )

    def names_step() -> LinkResult:
        found = names(question, tokens)
        if capitals and not (found.candidates and _holds(found, capitals)):
            # "What language do Jamaican people speak?", "Where did Franklin work?": capitals no
            # name matched whole are read as a lower-case question reads them (demonyms, partial
            # names, relation words), where that reading's mention holds one of them.
            lowered = names(question.lower(), tokenize(question.lower()))
            if lowered.candidates and _holds(lowered, [c.lower() for c in capitals]):
                return lowered
        return found

    for step in (
        names_step,
        lambda: LinkResult(link_fulltext_covering(store, tokens, limit=fulltext_limit)),
        lambda: LinkResult(link_vector(store, embedder, question, tokens, k=k, min_score=min_vector_score)),
    ):
        found = step()
        if found.candidates:
            log.debug("linked %r via %s: %s", question, found.method, [c.id for c in found.topics])
            return found
    raise EntityNotFoundError(
        f"no entity matched the question {question!r} well enough: no name or near miss of one, "
        f"no full-text hit, no entity embedding within similarity {min_vector_score:g}",
        hint="check the spelling of the entity name, or pass its id with --topic",
    )


def _holds(result: LinkResult, words: Sequence[str]) -> bool:
    """Whether the best topic's mention holds one of ``words`` as a word of its own ("MA" is no
    word of "maturation arrest")."""
    mention = result.topics[0].mention.split()
    return any(word in mention for word in words)
