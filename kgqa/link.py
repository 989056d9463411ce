"""Entity linking: find the store entities a question is about.

Methods, tried in this order; the first that yields candidates wins:

1. ``topic``: explicit topic ids given by the caller (every one must exist).
2. ``bracket``: spans in ``[brackets]`` (the MetaQA convention), matched by id, then by normalised name.
3. ``exact`` and ``fuzzy`` names, together: word n-grams of the question whose normalised form
   equals an ``Entity.name_norm`` (one ``link_exact`` call for all n-grams), plus fuzzy full-text
   hits (``word~1``) for the content words no named exact match covers, re-scored against the
   question's n-grams with rapidfuzz; mentions are chosen without overlap, named and longer
   matches first (:func:`_span_rank`). This is what survives lower case, typos and partial names.
4. ``vector``: nearest entity embeddings to the question embedding.

Scores are comparable across methods (see ``LinkedEntity.score``): topic and bracket 1.0, exact
0.95, fuzzy 0.95 times the name similarity (below 0.95), vector scaled into (0, 0.9]. Which of
several close candidates is the topic is decided by their fit to the question
(:mod:`kgqa.retrieval.disambiguation`), where a trained retriever is at hand.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rapidfuzz import process
from rapidfuzz.distance import OSA

from kgqa.embed.protocol import Embedder
from kgqa.errors import EntityNotFoundError
from kgqa.linking_words import (
    RelationWords,
    demonym_stem,
    is_acronym_of,
    is_demonym_of,
    partial_name_quality,
    popularity,
    strip_possessive,
)
from kgqa.names import BRACKET as _BRACKET
from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import SCHEMA_VERSION, LinkedEntity

log = logging.getLogger(__name__)

#: Words that never name an entity on their own: question words, articles, auxiliaries, pronouns
#: and prepositions. An n-gram made only of these (or of 1-character tokens) is not looked up.
STOP_WORDS = frozenset(
    """
    a an the and or not of in on at to for from by with about as into onto over under
    what which who whom whose when where why how
    is are was were be been being do does did done has have had can could would should will shall may
    i me my we our you your he him his she her it its they them their this that these those there
    also any all some each other same than then
    """.split()
)

SCORE_TOPIC = 1.0
SCORE_BRACKET = 1.0
SCORE_EXACT = 0.95
SCORE_FALLBACK_MAX = 0.9  # vector scores are scaled into (0, SCORE_FALLBACK_MAX]
MAX_FUZZY_QUALITY = 0.999  # a fuzzy match never ties an exact one
TYPO_EDITS = 1  # edits a misspelt word may be away from the name's word (one typo: one OSA edit)
FULLTEXT_LIMIT = 200  # full-text hits re-scored per question (common words crowd out a misspelt name)
CONTENDER_MARGIN = 0.15  # full-text and vector candidates this close to the top one are weighed by fit
MAX_CONTENDERS = 3
PRIOR_QUALITY_WEIGHT = 3.0  # match quality against log(1 + degree): a partial name needs ~5x the facts
DEMONYM_QUALITY = 0.9  # a demonym's place ranks like a near miss of its name
DEMONYM_ROWS = 20  # link_prefix rows per demonym stem
ACRONYM_QUALITY = 0.9  # an acronym's name ranks like a near miss of it
ACRONYM_LETTERS = range(2, 5)  # word lengths tried as acronyms ("uk" .. "nasa")
ACRONYM_NEIGHBOURS = 30  # nearest entity embeddings searched for a name the acronym spells
MIN_VECTOR_SCORE = 0.8  # Neo4j-scale similarity below which a vector neighbour is not a match (cos < 0.6:
# with all-MiniLM-L6-v2, gibberish such as "zzzxqv qqqq" is within cos 0.59 of some short MetaQA name)

_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "?!.,;:\"'()[]{}"
_LUCENE_SPECIAL = frozenset('+-&|!(){}[]^"~*?:\\/')
_CASE_NON_WORD = re.compile(r"[^0-9A-Za-z]+")
_CASE_ARTICLE = re.compile(r"^(?:the|a|an) ", re.I)
_ARTICLES = frozenset({"the", "a", "an"})
_MIN_WORDS_ALL_CAPS = 3  # from this many words on, a fully capitalised question carries no case cue
_EXACT_ROWS_PER_NAME = 8  # link_exact row cap per looked-up n-gram (titles and tags repeat names)

MatchKind = Literal["name", "typo", "partial", "demonym", "acronym"]

EmbedderSource = Embedder | Callable[[], Embedder]
"""An embedder, or a zero-argument factory called only when the vector step runs."""


@dataclass(frozen=True, slots=True)
class LinkResult:
    """Ranked linking candidates for one question.

    Attributes:
        candidates: matched entities, best first, one entry per entity id.
    """

    candidates: tuple[LinkedEntity, ...]
    chosen: tuple[LinkedEntity, ...] | None = None
    ties: tuple[LinkedEntity, ...] | None = None

    @property
    def topics(self) -> tuple[LinkedEntity, ...]:
        """What retrieval starts from: ``chosen`` where the linker set it, else the best candidate
        per mention, in rank order.

        Mentions never overlap (the name step keeps only non-overlapping spans). Full-text and
        vector candidates share one mention, so those steps give one topic. Explicit topic ids are
        all kept.
        """
        if self.chosen is not None:
            return self.chosen
        chosen: list[LinkedEntity] = []
        mentions: set[tuple[str, str]] = set()
        ids: set[str] = set()
        for cand in self.candidates:
            key = (cand.method, cand.mention)
            if cand.id in ids or (cand.method != "topic" and key in mentions):
                continue
            chosen.append(cand)
            mentions.add(key)
            ids.add(cand.id)
        return tuple(chosen)

    @property
    def method(self) -> str:
        """The step that produced the candidates ("" when empty)."""
        return self.candidates[0].method if self.candidates else ""

    def contenders(self, margin: float = CONTENDER_MARGIN, limit: int = MAX_CONTENDERS) -> list[LinkedEntity]:
        """The entities disambiguation weighs as the question's topic (at most ``limit``, the
        first topic first).

        Where the name step set ``ties``, they are the first topic's twins: the same mention
        matched as well, with no cue in the question's text to tell them apart (a person and its
        tag twin in a lower-case question). Otherwise, the candidates scored within ``margin`` of
        the first topic. Other topics (other mentions of the question) never compete; explicit
        topic ids and brackets have no contenders.
        """
        topics = self.topics
        if not topics or topics[0].method in ("topic", "bracket"):
            return list(topics[:1])
        if self.ties is not None:
            return list(self.ties[:limit])
        others = {t.id for t in topics[1:]}
        close = [
            c
            for c in self.candidates
            if c.id not in others and c.score >= topics[0].score - margin and c.id != topics[0].id
        ]
        return [topics[0], *close][:limit]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "candidates": [c.to_dict() for c in self.candidates],
            "topics": [c.id for c in self.topics],
        }


@dataclass(frozen=True, slots=True)
class _Token:
    """One whitespace-separated word of the question."""

    text: str
    start: int  # character offset in the question
    word: str  # normalised like Entity.name_norm
    content: bool  # not a stop word and longer than one character
    capitalised: bool  # has an upper-case letter (not the question's first) in a cased question
    name_like: bool  # capitalised or holds a digit


@dataclass(frozen=True, slots=True)
class _Span:
    """A word n-gram of the question: tokens [start, end)."""

    start: int
    end: int
    raw: str  # the question text it covers
    text: str  # ``raw`` without edge punctuation (the mention)
    norm: str  # normalised like Entity.name_norm
    capitalised: bool  # some token is
    name_like: bool  # some token is
    words: int  # tokens that are content words or name-like
    words_norm: tuple[str, ...]  # ``norm`` split into words
    relational: bool = False  # most of its words are relation words ("official language")


def link(
    store: GraphStore,
    embedder: EmbedderSource,
    question: str,
    *,
    topic_ids: Sequence[str] = (),
    k: int = 5,
    max_ngram: int = 16,
    fulltext_limit: int = FULLTEXT_LIMIT,
    min_vector_score: float = MIN_VECTOR_SCORE,
    relation_words: RelationWords | None = None,
) -> LinkResult:
    """Link a question to store entities.

    Args:
        store: the graph store holding ``:Entity`` nodes with ``name_norm`` and the search indexes.
        embedder: the store's embedding model, or a factory for it; only the vector step (reached
            when nothing else matched) uses it, so a factory keeps model loading off the fast path.
        question: the question text; ``[bracketed]`` spans are taken as entity names or ids.
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
        return LinkResult(_link_topics(store, topic_ids))
    spans = bracket_spans(question)
    if spans:
        return LinkResult(_link_brackets(store, spans))
    tokens = _tokens(question)
    for step in (
        lambda: _link_names(
            store,
            question,
            tokens,
            max_ngram=max_ngram,
            fulltext_limit=fulltext_limit,
            relation_words=relation_words,
            embedder=embedder,
        ),
        lambda: LinkResult(_link_fulltext(store, tokens, limit=fulltext_limit)),
        lambda: LinkResult(_link_vector(store, embedder, question, tokens, k=k, min_score=min_vector_score)),
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


def bracket_spans(question: str) -> list[str]:
    """Texts inside ``[brackets]``, stripped, in order: ``"who is [Tom Hanks]"`` -> ``["Tom Hanks"]``."""
    return [m.group(1).strip() for m in _BRACKET.finditer(question) if m.group(1).strip()]


def strip_brackets(question: str) -> str:
    """The question without bracket characters (MetaQA question as a user would type it).

    ``"what movies did [Tom Hanks] act in"`` -> ``"what movies did Tom Hanks act in"``.
    """
    text = _BRACKET.sub(lambda m: m.group(1), question)
    return " ".join(text.split())


def escape_lucene(text: str) -> str:
    """Backslash-escape Lucene query syntax characters (``+ - & | ! ( ) { } [ ] ^ " ~ * ? : \\ /``).

    ``"AC/DC: Live!"`` -> ``"AC\\/DC\\: Live\\!"``. Operator words (AND, OR, NOT) are not touched;
    lower-case them or drop them before building a query.
    """
    return "".join(f"\\{ch}" if ch in _LUCENE_SPECIAL else ch for ch in text)


def _case_key(text: str, *, bare: bool = False) -> str:
    """Accent- and punctuation-free form that keeps letter case: ``"Moulin Rouge!"`` -> ``"Moulin Rouge"``.

    With ``bare`` a leading article is dropped too (``"The Fury"`` -> ``"Fury"``).
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    key = _CASE_NON_WORD.sub(" ", ascii_text.replace("_", " ")).strip()
    return (_CASE_ARTICLE.sub("", key) or key) if bare else key


def _tokens(question: str) -> list[_Token]:
    """Whitespace tokens with their normalised form and the flags the exact step needs.

    Capitalisation marks a name (the question's first letter aside) unless the question is written
    in capitals throughout ("WHO DIRECTED JAWS", "Who Directed Jaws"); digits always do ("1984",
    "3 A.M.", "+1"). The pronoun "I" never does.
    """
    found = [(m.group(), m.start()) for m in _TOKEN.finditer(question)]
    capitals = [any(ch.isupper() for ch in (text[1:] if start == 0 else text)) for text, start in found]
    alphabetic = [i for i, (text, _) in enumerate(found) if i > 0 and any(ch.isalpha() for ch in text)]
    cased = len(alphabetic) < _MIN_WORDS_ALL_CAPS or not all(capitals[i] for i in alphabetic)
    tokens = []
    for (text, start), capital in zip(found, capitals, strict=True):
        word = normalise_name(text)
        capitalised = cased and capital and text != "I"
        name_like = capitalised or any(ch.isdigit() for ch in text)
        content = bool(word) and word not in STOP_WORDS and len(word) > 1
        tokens.append(_Token(text, start, word, content, capitalised, name_like))
    return tokens


def _link_topics(store: GraphStore, topic_ids: Sequence[str]) -> tuple[LinkedEntity, ...]:
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


def _link_brackets(store: GraphStore, spans: Sequence[str]) -> tuple[LinkedEntity, ...]:
    unique = list(dict.fromkeys(spans))
    by_id = {r["id"]: r for r in store.run(queries.get("entities_names"), {"ids": unique})}
    by_norm = _exact_rows(store, {normalise_name(s) for s in unique if s not in by_id})
    found: list[list[LinkedEntity]] = []
    missing = []
    for span in unique:
        if span in by_id:
            row = by_id[span]
            found.append([_entity(row, SCORE_BRACKET, span, "bracket")])
            continue
        rows = [row for row, _ in _rank_rows(by_norm.get(normalise_name(span), []), span)]
        if not rows:
            missing.append(span)
        found.append([_entity(r, SCORE_BRACKET, span, "bracket") for r in rows])
    if missing:
        raise EntityNotFoundError(
            f"no entity matches the bracketed name(s) {', '.join(repr(m) for m in missing)}",
            hint="check the spelling inside the brackets, or pass the entity id with --topic",
        )
    return _interleave(found)


def _link_names(
    store: GraphStore,
    question: str,
    tokens: Sequence[_Token],
    *,
    max_ngram: int,
    fulltext_limit: int,
    relation_words: RelationWords | None = None,
    embedder: EmbedderSource | None = None,
) -> LinkResult:
    """Exact and fuzzy name matches, one group of entities per chosen mention, best mention first.

    Every n-gram is looked up exactly (``link_exact``); the content words no name-like exact match
    covers go to the full-text index as fuzzy terms (``link_fulltext``, ``word~1``), whose hits are
    re-scored against the question's n-grams with rapidfuzz (:func:`_fuzzy_matches`). Mentions are
    then ranked by :func:`_span_rank` and chosen without overlap, so a longer fuzzy match of a real
    name ("forest gump" -> Forrest Gump) beats a short exact one ("forest"), and a lone common noun
    ("director") is dropped when a named mention is present.

    A question without capitals gets people's words as well (:func:`_people_matches`): partial
    names, demonyms, acronyms (where ``embedder`` is a loaded model) and possessives; its
    mentions made of relation words ("official language") rank as common nouns, and the
    popularity prior (:func:`_prior`) orders the readings of a mention.
    """
    uncased = not any(t.capitalised for t in tokens)
    if uncased and relation_words is None:
        relation_words = RelationWords.from_store(store)
    spans = _ngrams(question, tokens, max_ngram=max_ngram, relation_words=relation_words if uncased else None)
    rows_by_norm = _exact_rows(store, {s.norm for s in spans})
    matches = [
        _Match(span, row, 1.0, cue)
        for span in spans
        for row, cue in _rank_rows(
            rows_by_norm.get(span.norm, []),
            span.text,
            raw=span.raw,
            uncased=uncased,
            article=tokens[span.start - 1].text.lower() if span.start else "",
        )
    ]
    covered = {i for m in matches if _span_tier(m, uncased) < 2 for i in range(m.span.start, m.span.end)}
    leftover = [i for i, t in enumerate(tokens) if t.content and i not in covered]
    if leftover:
        matches += _fuzzy_matches(store, tokens, spans, leftover, limit=fulltext_limit, uncased=uncased)
    if uncased and relation_words is not None:
        matches += _people_matches(store, tokens, spans, matches, relation_words, limit=fulltext_limit)
        if isinstance(embedder, Embedder):  # a model already loaded; a factory is kept for the vector step
            matches += _acronym_matches(store, embedder, tokens, spans, matches, relation_words)
    by_span: dict[tuple[int, int], list[_Match]] = {}
    for match in matches:
        by_span.setdefault((match.span.start, match.span.end), []).append(match)
    groups = [
        sorted(group, key=(lambda m: -_prior(m)) if uncased else (lambda m: -m.quality))  # stable
        for group in by_span.values()
    ]
    chosen: list[list[_Match]] = []
    taken: set[int] = set()
    for group in sorted(
        groups, key=lambda g: _uncased_span_rank(g[0]) if uncased else _span_rank(g[0], uncased)
    ):
        span = group[0].span
        if taken.isdisjoint(range(span.start, span.end)):
            taken.update(range(span.start, span.end))
            chosen.append(group)
    if chosen:
        best_tier = _span_rank(chosen[0][0], uncased)[0]
        if best_tier == 0:
            # The question capitalises names, so lower-case words are not mentions ("films", "star").
            chosen = [g for g in chosen if g[0].span.name_like]
        elif best_tier == 1:
            # A named mention is present: a lone common noun ("director") is not a topic.
            chosen = [g for g in chosen if _span_tier(g[0], uncased) < 2]
        else:
            # Only lone words: one of them is the topic, the others its runners-up. Unless one of
            # them is a proper name in the KB, full-text hits for a partial name ("films by
            # zemeckis") join them, ahead of lower-case tags.
            lone = _interleave([[_candidate(m) for m in group] for group in chosen])
            proper = _is_proper(lone[0].name)
            partial = () if proper else _link_fulltext(store, tokens, limit=fulltext_limit)
            if uncased:
                firsts = {_candidate(g[0]).id: g[0] for g in chosen}
                ranked = tuple(
                    sorted(_unique((*lone, *partial)), key=lambda c: _uncased_lone_rank(c, firsts.get(c.id)))
                )
            else:
                ranked = tuple(sorted(_unique((*lone, *partial)), key=_lone_word_rank))
            top = ranked[0]
            groups = [g for g in chosen if _candidate(g[0]) == top]
            if groups:
                ties = _twins(groups[0])
            else:  # a partial name: the full-text hits that scored the same
                ties = tuple(c for c in partial if (c.mention, c.score) == (top.mention, top.score))
            return LinkResult(ranked, chosen=ranked[:1], ties=ties)
    if not chosen:
        return LinkResult(())
    return LinkResult(
        _interleave([[_candidate(m) for m in group] for group in chosen]), ties=_twins(chosen[0])
    )


def _people_matches(
    store: GraphStore,
    tokens: Sequence[_Token],
    spans: Sequence[_Span],
    matches: Sequence[_Match],
    relation_words: RelationWords,
    *,
    limit: int,
) -> list[_Match]:
    """Partial names and demonyms of the question's words (:mod:`kgqa.linking_words`).

    Partial names: full-text hits for the content words that are no relation words, each kept
    with the longest question span that is a run of its name's words ("franklin" -> Benjamin
    Franklin, "ben franklin" -> Benjamin Franklin), quality below an exact match's. Demonyms: for a
    content word of 6+ letters no name matches exactly, the one-word names that start with its
    stem (``link_prefix``) and read as its place ("jamaican" -> Jamaica), quality
    ``DEMONYM_QUALITY``.
    """
    words = [
        (i, t.text.strip(_EDGE_PUNCT).lower())
        for i, t in enumerate(tokens)
        if t.content and relation_words.share([t.word]) < 1.0
    ]
    found: list[_Match] = []
    terms = [escape_lucene(strip_possessive(w) or w) for _, w in words if w]
    if terms:
        rows = store.run(
            queries.get("link_fulltext"), {"query": " ".join(dict.fromkeys(terms)), "limit": limit}
        )
        by_last: dict[str, list[_Span]] = {}
        for span in spans:
            if span.words and not span.relational and not all(w.isdigit() for w in span.words_norm):
                by_last.setdefault(span.words_norm[-1], []).append(span)
        for row in rows:
            name_words = normalise_name(row["name"] or row["id"]).split()
            best: tuple[int, float, _Span] | None = None
            for word in set(name_words):
                for span in by_last.get(word, ()):
                    quality = partial_name_quality(span.words_norm, name_words)
                    if quality > 0 and (best is None or (len(span.words_norm), quality) > best[:2]):
                        best = (len(span.words_norm), quality, span)
            if best is not None:
                found.append(_Match(best[2], row, best[1], (False,), "partial"))
    exact = {(m.span.start, m.span.end) for m in matches if m.quality >= 1.0}
    singles = {(s.start, s.norm): s for s in spans if s.end - s.start == 1}
    for i, _ in words:
        single = singles.get((i, tokens[i].word))
        stem = demonym_stem(tokens[i].word)
        if single is None or stem is None or (i, i + 1) in exact:
            continue
        rows = store.run(queries.get("link_prefix"), {"prefix": stem, "limit": DEMONYM_ROWS})
        found += [
            _Match(single, row, DEMONYM_QUALITY, (False,), "demonym")
            for row in rows
            if is_demonym_of(single.norm, row["name_norm"])
        ]
    return found


def _acronym_matches(
    store: GraphStore,
    embedder: EmbedderSource,
    tokens: Sequence[_Token],
    spans: Sequence[_Span],
    matches: Sequence[_Match],
    relation_words: RelationWords,
) -> list[_Match]:
    """Names whose initials a short word spells, among the word's nearest entity embeddings
    ("uk" -> United Kingdom, "jfk" -> John F. Kennedy), quality ``ACRONYM_QUALITY``.

    Only words of ``ACRONYM_LETTERS`` letters that no proper name matches exactly are tried, so
    the embedding model is loaded only for a question that has one.
    """
    proper = {
        (m.span.start, m.span.end) for m in matches if m.quality >= 1.0 and _is_proper(m.row["name"] or "")
    }
    singles = {(s.start, s.norm): s for s in spans if s.end - s.start == 1}
    wanted = []
    for i, token in enumerate(tokens):
        span = singles.get((i, token.word))
        if (
            span is not None
            and token.content
            and token.word.isalpha()
            and len(token.word) in ACRONYM_LETTERS
            and (i, i + 1) not in proper
            and relation_words.share([token.word]) < 1.0
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
            _Match(span, row, ACRONYM_QUALITY, (False,), "acronym")
            for row in rows
            if is_acronym_of(span.norm, normalise_name(row["name"] or row["id"]))
        ]
    return found


def _prior(match: _Match) -> float:
    """How likely a reading of a mention is, in a question without capitals: the popularity
    prior (log(1 + degree)) plus ``PRIOR_QUALITY_WEIGHT`` times the match quality, so a partial
    name wins over an exact one when its entity is far better connected ("tupac": Tupac Shakur
    over the book author record "Tupac")."""
    return popularity(match.row.get("degree")) + PRIOR_QUALITY_WEIGHT * match.quality


def _uncased_lone_rank(cand: LinkedEntity, match: _Match | None) -> tuple[bool, bool, bool, bool, float]:
    """Order of lone-word candidates in a question without capitals: whole-name matches before
    the full-text bag of words, mentions of relation words last ("capital" after "egypt"),
    proper names before tags, typos after the rest ("write" is no typo of Writer where "tupac"
    names Tupac Shakur), then the popularity prior (:func:`_prior`): "seattle" (51 facts)
    before "washington" (7)."""
    if match is None:
        return (True, False, False, False, -cand.score)
    proper = _is_proper(cand.name)
    return (False, match.span.relational, not proper, match.kind in ("typo", "partial"), -_lone_length(match))


def _uncased_span_rank(match: _Match) -> tuple[int, bool, bool, bool, float, int]:
    """:func:`_span_rank` for a question without capitals: named mentions (several words, or
    digits) by matched length first, then lone words and relation-word mentions as
    :func:`_uncased_lone_rank` orders them."""
    tier = _span_tier(match, True)
    if tier < 2:
        rank = _span_rank(match, True)
        return (tier, False, False, False, rank[1], match.span.start)
    proper = _is_proper(match.row["name"] or match.row["id"])
    partial = match.kind in ("typo", "partial")
    return (2, match.span.relational, not proper, partial, -_lone_length(match), match.span.start)


def _lone_length(match: _Match) -> float:
    """Matched length (normalised characters times quality) plus the popularity prior
    (:func:`_prior`) as a tie-break."""
    return len(match.span.norm) * match.quality + 0.01 * _prior(match)


def _twins(group: Sequence[_Match]) -> tuple[LinkedEntity, ...]:
    """The best match of a mention and those the question's text cannot tell from it (same
    quality, same cue from :func:`_rank_rows`)."""
    best = group[0]
    return _unique(_candidate(m) for m in group if (m.quality, m.cue) == (best.quality, best.cue))


@dataclass(frozen=True, slots=True)
class _Match:
    """One entity row matched to one question span; ``quality`` in (0, 1], 1 for an exact match."""

    span: _Span
    row: dict[str, Any]
    quality: float
    cue: tuple[bool, ...]  # see _rank_rows: equal cues and quality = twins the text cannot separate
    kind: MatchKind = "name"  # how the span names the row: whole name, typo, partial name, demonym


def _candidate(match: _Match) -> LinkedEntity:
    method = "exact" if match.quality >= 1.0 else "fulltext" if match.kind == "partial" else "fuzzy"
    return _entity(match.row, SCORE_EXACT * match.quality, match.span.text, method)


def _fuzzy_matches(
    store: GraphStore,
    tokens: Sequence[_Token],
    spans: Sequence[_Span],
    leftover: Sequence[int],
    *,
    limit: int,
    uncased: bool,
) -> list[_Match]:
    """Full-text hits for the ``leftover`` words, each kept with its best-matching question n-gram.

    The leftover words of 4+ letters are sent as fuzzy terms (``TYPO_EDITS``: a typo is one
    edit), their neighbours as plain terms, so a name with one misspelt word among
    matched ones ranks high ("santa fe tril" -> Santa Fe Trail). Each hit is kept with the n-gram
    it matches best (:func:`_best_span`, "tom hank" ~ "tom hanks": 0.89), or dropped. Partial
    names ("zemeckis") are left to the full-text step.
    """
    fuzzy = set(leftover)
    words = {
        tokens[i].text.strip(_EDGE_PUNCT).lower(): i in fuzzy
        for i, t in enumerate(tokens)
        if t.content and (i in fuzzy or i - 1 in fuzzy or i + 1 in fuzzy)
    }
    terms = [_fuzzy_term(w) if typo else escape_lucene(w) for w, typo in words.items() if w]
    if not terms:
        return []
    rows = store.run(queries.get("link_fulltext"), {"query": " ".join(terms), "limit": limit})
    usable = _SpansByWords([s for s in spans if fuzzy.intersection(range(s.start, s.end))])
    names = [normalise_name(row["name"] or row["id"]) for row in rows]
    known = {word for name_norm in names for word in name_norm.split()}
    found = {}
    for row, name_norm in zip(rows, names, strict=True):
        best = _best_span(name_norm, usable, known) if name_norm else None
        if best is not None:
            found[id(row)] = best
    ranked = _rank_rows([row for row in rows if id(row) in found], "", uncased=uncased)
    return [_Match(found[id(row)][0], row, found[id(row)][1], cue, "typo") for row, cue in ranked]


class _SpansByWords:
    """Question spans grouped by word count, with their normalised and space-free forms, for
    rapidfuzz's batch scoring."""

    def __init__(self, spans: Sequence[_Span]) -> None:
        self.spans: dict[int, list[_Span]] = {}
        for span in spans:
            self.spans.setdefault(len(span.words_norm), []).append(span)
        self.norms = {n: [s.norm for s in group] for n, group in self.spans.items()}
        self.joined = {n: [s.norm.replace(" ", "") for s in group] for n, group in self.spans.items()}


def _fuzzy_term(word: str) -> str:
    """A Lucene term for one question word: ``word~1`` from 4 letters, else the word."""
    escaped = escape_lucene(word)
    return f"{escaped}~{TYPO_EDITS}" if len(word) >= 4 else escaped


def _best_span(name_norm: str, spans: _SpansByWords, known: set[str]) -> tuple[_Span, float] | None:
    """The question span that best matches a name, with its quality, or None.

    A typo is an edit of a letter (deletion, transposition, substitution, duplication), counted
    as one by the optimal-string-alignment distance. The span must have the name's words, each
    the same or, for words of 4+ letters, within ``TYPO_EDITS`` of it: a typo changes letters of
    a word, not the words, so "starred by" is no near miss of the title "Starred Up", nor
    "directed movies" of the tag "funniest movies". A lone word that the index holds as typed
    (``known``: the words of the hits' names) is no typo either: "directed" does not become the
    title "Redirected", while "forest gump" still becomes Forrest Gump. A span one word shorter
    or longer matches when the two spell the same letters, give or take one ("fools gold" ~
    "Fool's Gold", normalised "fool s gold"). The quality is 1 - edits / letters of the name
    ("forest gump": 0.92, "osaar" -> Oscar: 0.8).
    """
    name_words = name_norm.split()
    n = len(name_words)
    candidates: list[tuple[_Span, int]] = []
    for _, edits, i in process.extract(
        name_norm, spans.norms.get(n, []), scorer=OSA.distance, score_cutoff=TYPO_EDITS * n, limit=None
    ):
        words = spans.spans[n][i].words_norm
        if n == 1 and words[0] in known and words[0] != name_words[0]:
            continue
        if all(
            a == b or (min(len(a), len(b)) >= 4 and OSA.distance(a, b) <= TYPO_EDITS)
            for a, b in zip(words, name_words, strict=True)
        ):
            candidates.append((spans.spans[n][i], int(edits)))
    joined = name_norm.replace(" ", "")
    if len(joined) >= 6:  # a word split or joined at punctuation: "twelve oclock high"
        for m in (n - 1, n + 1):
            for _, edits, i in process.extract(
                joined, spans.joined.get(m, []), scorer=OSA.distance, score_cutoff=1, limit=None
            ):
                candidates.append((spans.spans[m][i], int(edits)))
    best: tuple[_Span, float] | None = None
    for span, edits in candidates:
        quality = 1.0 - edits / len(name_norm)
        if best is None or (quality, len(span.norm)) > (best[1], len(best[0].norm)):
            best = (span, min(quality, MAX_FUZZY_QUALITY))
    return best


def _ngrams(
    question: str, tokens: Sequence[_Token], *, max_ngram: int, relation_words: RelationWords | None = None
) -> list[_Span]:
    """All word n-grams (n = max_ngram..1) worth looking up.

    Skipped: n-grams with neither a content word nor a name-like token (only stop words and
    1-character tokens: "what is the", "a"), and n-grams that start with a lower-case article,
    whose normalised form equals that of the n-gram without it ("the Fury director" -> "Fury").
    An n-gram ending in a possessive is looked up without it as well ("franklin's" -> "franklin").
    With ``relation_words``, n-grams whose content words are mostly relation words are marked
    ``relational``.
    """
    spans = []
    for n in range(min(max_ngram, len(tokens)), 0, -1):
        for i in range(len(tokens) - n + 1):
            window = tokens[i : i + n]
            if not any(t.content or t.name_like for t in window):
                continue
            if window[0].text in _ARTICLES:
                continue
            last = window[-1]
            raw = question[window[0].start : last.start + len(last.text)]
            text = raw.strip(_EDGE_PUNCT) or raw
            bare = strip_possessive(text)
            for variant in (text,) if bare is None else (text, bare):
                norm = normalise_name(variant)
                if not norm:
                    continue
                words_norm = tuple(norm.split())
                content = [w for w in words_norm if w not in STOP_WORDS and len(w) > 1]
                relational = relation_words is not None and relation_words.share(content) >= 1.0
                spans.append(
                    _Span(
                        i,
                        i + n,
                        raw,
                        variant,
                        norm,
                        any(t.capitalised for t in window),
                        any(t.name_like for t in window),
                        sum(t.content or t.name_like for t in window),
                        words_norm,
                        relational,
                    )
                )
    return spans


def _exact_rows(store: GraphStore, norms: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """``link_exact`` rows for all normalised names in one call, grouped by ``name_norm``."""
    names = sorted(set(norms))
    if not names:
        return {}
    rows = store.run(queries.get("link_exact"), {"names_norm": names, "limit": _EXACT_ROWS_PER_NAME})
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["name_norm"], []).append(row)
    return grouped


def _rank_rows(
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
    full, bare = _case_key(mention), _case_key(mention, bare=True)

    prefix = f"{article} " if article in _ARTICLES else ""

    def key(row: dict[str, Any]) -> tuple[bool, bool, bool, bool, bool, bool, str, str]:
        name = row["name"] or row["id"]
        starts_with_article = name.split(" ", 1)[0].lower() in _ARTICLES
        return (
            uncased and not _is_proper(name),
            not name.lower().startswith(prefix) if prefix else starts_with_article and bool(mention),
            name != raw,
            name != mention,
            _case_key(name) != full,
            _case_key(name, bare=True) != bare,
            name,
            row["id"],
        )

    keyed = sorted(((key(row), row) for row in rows), key=lambda kr: kr[0])
    return [(row, k[1:2] if uncased else k[1:-2]) for k, row in keyed]


def _is_proper(name: str) -> bool:
    """A name the KB writes with capitals or digits ("Jaws", "1994"), unlike a tag ("director")."""
    return any(ch.isupper() or ch.isdigit() for ch in name)


def _lone_word_rank(cand: LinkedEntity) -> tuple[bool, bool, float]:
    """Order of candidates when the question names nothing but lone words: whole-name matches
    before partial full-text hits ("what films are about mathematics": the tag, not a title with
    "films" and "about" in it), a proper name in the KB first ("surogates" -> Surrogates over the
    tag "director"), then matched length."""
    return (cand.method == "fulltext", not _is_proper(cand.name), -len(cand.mention) * cand.score)


def _span_tier(match: _Match, uncased: bool) -> int:
    """0: a capitalised mention equal to its entity's name in letter case ("Crazy Heart", not the
    title "Movie Crazy" matched case-insensitively in "the movie Crazy Heart"); 1: a named
    mention: capitals or digits in the question, or several words ("tom hanks", "forest gump");
    2: the rest, lone lower-case words ("films", "director", "star"), which may still name an
    entity ("jaws") but are weighed by fit when nothing named competes, and, in a question
    without capitals, mentions made mostly of relation words ("official language").
    """
    span = match.span
    if span.capitalised and _case_exact(match) and match.quality >= 1.0:
        return 0
    if uncased and span.relational:
        return 2
    return 1 if span.name_like or span.words > 1 else 2


def _case_exact(match: _Match) -> bool:
    """The mention has its entity's name in the same letter case (punctuation and a leading
    article aside)."""
    name = match.row["name"] or match.row["id"]
    return _case_key(name, bare=True) == _case_key(match.span.text, bare=True)


def _span_rank(match: _Match, uncased: bool) -> tuple[int, float, bool, int]:
    """Order of mentions (by their best match), used to resolve overlaps and to rank the chosen ones.

    1. Tier (:func:`_span_tier`).
    2. Matched length: the span's normalised characters times the match quality, so "rush hour 2"
       comes before "2" and "forest gump" (Forrest Gump, 0.92) before "forest" (an exact tag);
       among lone words, names the KB capitalises come first.
    3. A case-exact match, 4. earlier position.
    """
    span = match.span
    tier, length, case_exact = _span_tier(match, uncased), len(span.norm) * match.quality, _case_exact(match)
    if tier == 2:  # lone words: a proper name in the KB ("jaws" -> Jaws) before a tag ("director")
        length += 1000.0 * _is_proper(match.row["name"] or match.row["id"])
    return (tier, -length, not case_exact, span.start)


def _interleave(groups: Sequence[Sequence[LinkedEntity]]) -> tuple[LinkedEntity, ...]:
    """Best candidate of every mention first (in mention order), then the runners-up; ids unique."""
    ranked: list[LinkedEntity] = []
    seen: set[str] = set()
    depth = max((len(g) for g in groups), default=0)
    for level in range(depth):
        for group in groups:
            if level < len(group) and group[level].id not in seen:
                ranked.append(group[level])
                seen.add(group[level].id)
    return tuple(ranked)


def _content_words(tokens: Sequence[_Token]) -> list[str]:
    """Lower-cased content words (edge punctuation stripped), deduplicated, in question order."""
    words = (t.text.strip(_EDGE_PUNCT).lower() for t in tokens if t.content or t.name_like)
    return list(dict.fromkeys(w for w in words if w))


def _link_fulltext(store: GraphStore, tokens: Sequence[_Token], *, limit: int) -> tuple[LinkedEntity, ...]:
    words = _content_words(tokens)
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
    return _unique(_entity(r, SCORE_FALLBACK_MAX * r["score"] / top, mention, "fulltext") for r in rows)


def _link_vector(
    store: GraphStore,
    embedder: EmbedderSource,
    question: str,
    tokens: Sequence[_Token],
    *,
    k: int,
    min_score: float,
) -> tuple[LinkedEntity, ...]:
    if not _content_words(tokens):
        return ()  # nothing in the question could name an entity; skip loading the model
    model = embedder if isinstance(embedder, Embedder) else embedder()
    vector = model.embed([question])[0].tolist()
    rows = store.run(queries.get("link_vector"), {"embedding": vector, "k": k})
    rows = sorted((r for r in rows if r["score"] >= min_score), key=lambda r: -r["score"])
    return _unique(_entity(r, SCORE_FALLBACK_MAX * r["score"], question, "vector") for r in rows)


def _unique(cands: Iterable[LinkedEntity]) -> tuple[LinkedEntity, ...]:
    seen: set[str] = set()
    out = []
    for cand in cands:
        if cand.id not in seen:
            seen.add(cand.id)
            out.append(cand)
    return tuple(out)


def _entity(row: dict[str, Any], score: float, mention: str, method: str) -> LinkedEntity:
    name = row["name"] or row["id"]
    return LinkedEntity(id=row["id"], name=name, score=score, mention=mention, method=method)
