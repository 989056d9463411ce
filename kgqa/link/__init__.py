"""Entity linking: find the store entities a question is about.

Methods, tried in this order; the first that yields candidates wins (:func:`link`):

1. ``topic``: explicit topic ids given by the caller (every one must exist).
2. ``bracket``: spans in ``[brackets]`` (the MetaQA convention), matched by id, then by normalised name.
3. ``exact`` and ``fuzzy`` names, together: word n-grams of the question whose normalised form
   equals an ``Entity.name_norm`` (one ``link_exact`` call for all n-grams), plus fuzzy full-text
   hits (``word~1``) for the content words no named exact match covers, re-scored against the
   question's n-grams with rapidfuzz; mentions are chosen without overlap, named and longer
   matches first (:func:`kgqa.link.matches.span_rank`). This is what survives lower case, typos
   and partial names.
4. ``vector``: nearest entity embeddings to the question embedding.

Scores are comparable across methods (see ``LinkedEntity.score``): topic and bracket 1.0, exact
0.95, fuzzy 0.95 times the name similarity (below 0.95), vector scaled into (0, 0.9]. Which of
several close candidates is the topic is decided by their fit to the question
(:mod:`kgqa.retrieval.disambiguation`), where a trained retriever is at hand.

One module per concept: :mod:`~kgqa.link.linker` (the order of the steps),
:mod:`~kgqa.link.explicit` (topic ids, brackets), :mod:`~kgqa.link.name_step` (exact and fuzzy
names), :mod:`~kgqa.link.exact`, :mod:`~kgqa.link.fuzzy` and :mod:`~kgqa.link.people` (the
matches it gathers), :mod:`~kgqa.link.matches` (how they rank), :mod:`~kgqa.link.search`
(full-text and vector fallbacks), :mod:`~kgqa.link.tokens` (the question as words) and
:mod:`~kgqa.link.result` (candidates and scores).
"""

from kgqa.link.linker import link
from kgqa.link.result import (
    CONTENDER_MARGIN,
    MAX_CONTENDERS,
    SCORE_BRACKET,
    SCORE_EXACT,
    SCORE_FALLBACK_MAX,
    SCORE_TOPIC,
    LinkResult,
)
from kgqa.link.search import FULLTEXT_LIMIT, MIN_VECTOR_SCORE, EmbedderSource
from kgqa.link.tokens import STOP_WORDS, escape_lucene

__all__ = [
    "CONTENDER_MARGIN",
    "FULLTEXT_LIMIT",
    "MAX_CONTENDERS",
    "MIN_VECTOR_SCORE",
    "SCORE_BRACKET",
    "SCORE_EXACT",
    "SCORE_FALLBACK_MAX",
    "SCORE_TOPIC",
    "STOP_WORDS",
    "EmbedderSource",
    "LinkResult",
    "escape_lucene",
    "link",
]
