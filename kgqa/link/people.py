"""People's words for entities in a question without capitals: partial names, demonyms and
acronyms (:mod:`kgqa.linking_words`)."""

from __future__ import annotations

from collections.abc import Sequence

from kgqa.embed.protocol import Embedder
from kgqa.link.matches import Match
from kgqa.link.search import EmbedderSource
from kgqa.link.tokens import EDGE_PUNCT, Span, Token, escape_lucene, is_proper
from kgqa.linking_words import (
    RelationWords,
    demonym_stem,
    is_acronym_of,
    is_demonym_of,
    partial_name_quality,
    strip_possessive,
)
from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.protocol import GraphStore

DEMONYM_QUALITY = 0.9  # a demonym's place ranks like a near miss of its name
DEMONYM_ROWS = 20  # link_prefix rows per demonym stem
ACRONYM_QUALITY = 0.9  # an acronym's name ranks like a near miss of it
ACRONYM_LETTERS = range(2, 7)  # word lengths tried as acronyms ("uk" .. "nafta")
#: From this many letters on a word is tried as an acronym only where no name reads it at all:
#: most such words are common words ("films", "actor") and each try costs a vector query.
ACRONYM_UNREAD_FROM = 5
ACRONYM_NEIGHBOURS = 30  # nearest entity embeddings searched for a name the acronym spells
#: English quantifiers that the stop words leave as content words (a closed class, like them).
_QUANTIFIERS = frozenset({"most", "many", "much", "more", "few", "several", "both", "every", "various"})


def people_matches(
    store: GraphStore,
    tokens: Sequence[Token],
    spans: Sequence[Span],
    matches: Sequence[Match],
    relation_words: RelationWords,
    *,
    limit: int,
) -> list[Match]:
    """Partial names and demonyms of the question's words (:mod:`kgqa.linking_words`).

    Partial names: full-text hits for the content words that are no relation words, each kept
    with the longest question span that is a run of its name's words ("franklin" -> Benjamin
    Franklin, "ben franklin" -> Benjamin Franklin) and starts with a content word, quality below
    an exact match's. Demonyms: for a content word of 6+ letters no name matches exactly and
    that heads no compound (:func:`_compound_head`), the one-word names that start with its stem
    (``link_prefix``) and read as its place ("jamaican" -> Jamaica), quality
    ``DEMONYM_QUALITY``.
    """
    words = [
        (i, t.text.strip(EDGE_PUNCT).lower())
        for i, t in enumerate(tokens)
        if t.content and relation_words.share([t.word]) < 1.0
    ]
    found: list[Match] = []
    terms = [escape_lucene(strip_possessive(w) or w) for _, w in words if w]
    if terms:
        rows = store.run(
            queries.get("link_fulltext"), {"query": " ".join(dict.fromkeys(terms)), "limit": limit}
        )
        by_last: dict[str, list[Span]] = {}
        for span in spans:
            if (
                tokens[span.start].content  # "of the supreme court" names no Seal of the Supreme Court
                and not span.relational
                and not all(w.isdigit() for w in span.words_norm)
            ):
                by_last.setdefault(span.words_norm[-1], []).append(span)
        for row in rows:
            name_words = normalise_name(row["name"] or row["id"]).split()
            best: tuple[int, float, Span] | None = None
            for word in set(name_words):
                for span in by_last.get(word, ()):
                    quality = partial_name_quality(span.words_norm, name_words)
                    if quality > 0 and (best is None or (len(span.words_norm), quality) > best[:2]):
                        best = (len(span.words_norm), quality, span)
            if best is not None:
                found.append(Match(best[2], row, best[1], (False,), "partial"))
    exact = {(m.span.start, m.span.end) for m in matches if m.quality >= 1.0}
    singles = {(s.start, s.norm): s for s in spans if s.end - s.start == 1}
    for i, _ in words:
        single = singles.get((i, tokens[i].word))
        stem = demonym_stem(tokens[i].word)
        if single is None or stem is None or (i, i + 1) in exact or _compound_head(tokens, i):
            continue
        rows = store.run(queries.get("link_prefix"), {"prefix": stem, "limit": DEMONYM_ROWS})
        found += [
            Match(single, row, DEMONYM_QUALITY, (False,), "demonym")
            for row in rows
            if is_demonym_of(single.norm, row["name_norm"])
        ]
    return found


def _compound_head(tokens: Sequence[Token], i: int) -> bool:
    """Whether word ``i`` is a plural noun after a content word, the head of a compound the word
    before it narrows: "the sioux indians" are Sioux people, not India. An adjective keeps its
    place after any word ("who founded islamic religion"), and a quantifier narrows nothing
    ("what language do most australians speak")."""
    before = tokens[i - 1] if i > 0 else None
    return (
        before is not None
        and before.content
        and before.word not in _QUANTIFIERS
        and tokens[i].word.endswith("s")
    )


def acronym_matches(
    store: GraphStore,
    embedder: EmbedderSource,
    tokens: Sequence[Token],
    spans: Sequence[Span],
    matches: Sequence[Match],
    relation_words: RelationWords,
) -> list[Match]:
    """Names whose initials a short word spells, among the word's nearest entity embeddings
    ("uk" -> United Kingdom, "jfk" -> John F. Kennedy), quality ``ACRONYM_QUALITY``.

    Only words of ``ACRONYM_LETTERS`` letters (a possessive aside: "jfk's") that no proper name
    matches exactly are tried, so the embedding model is loaded only for a question that has one;
    a word of :data:`ACRONYM_UNREAD_FROM` letters or more ("nafta") only where no name reads it
    at all, not even as a partial name or a typo.
    """
    proper = {
        (m.span.start, m.span.end) for m in matches if m.quality >= 1.0 and is_proper(m.row["name"] or "")
    }
    read = {i for m in matches for i in range(m.span.start, m.span.end)}
    singles = {(s.start, s.norm): s for s in spans if s.end - s.start == 1}
    wanted = []
    for i, token in enumerate(tokens):
        bare = strip_possessive(token.text.strip(EDGE_PUNCT))  # "jfk's" spells "jfk"
        word = token.word if bare is None else normalise_name(bare)
        span = singles.get((i, word))
        if (
            span is not None
            and token.content
            and word.isalpha()
            and len(word) in ACRONYM_LETTERS
            and (i, i + 1) not in proper
            and (len(word) < ACRONYM_UNREAD_FROM or i not in read)
            and relation_words.share([word]) < 1.0
        ):
            wanted.append(span)
    if not wanted:
        return []
    model = embedder if isinstance(embedder, Embedder) else embedder()
    vectors = model.embed([s.norm for s in wanted])
    found = []
    for span, vector in zip(wanted, vectors, strict=True):
        rows = store.run(queries.get("link_vector"), {"embedding": vector.tolist(), "k": ACRONYM_NEIGHBOURS})
        found += [
            Match(span, row, ACRONYM_QUALITY, (False,), "acronym")
            for row in rows
            if is_acronym_of(span.norm, normalise_name(row["name"] or row["id"]))
        ]
    return found
