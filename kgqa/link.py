"""Entity linking: find the store entities a question is about.

Methods, tried in this order; the first that yields candidates wins:

1. ``topic``: explicit topic ids given by the caller (every one must exist).
2. ``bracket``: spans in ``[brackets]`` (the MetaQA convention), matched by id, then by normalised name.
3. ``exact``: word n-grams of the question whose normalised form equals an ``Entity.name_norm``,
   longest non-overlapping spans first (one ``link_exact`` call for all n-grams).
4. ``fulltext``: a Lucene query of the question's content words against the ``entity_name`` index.
5. ``vector``: nearest entity embeddings to the question embedding.

Scores are comparable across methods (see ``LinkedEntity.score``): topic and bracket 1.0, exact
0.95, full-text and vector scaled into (0, 0.9].
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kgqa.embed.protocol import Embedder
from kgqa.errors import EntityNotFoundError
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
SCORE_FALLBACK_MAX = 0.9  # full-text and vector scores are scaled into (0, SCORE_FALLBACK_MAX]
MIN_VECTOR_SCORE = 0.5  # Neo4j-scale similarity below which a vector neighbour is not a match (cos <= 0)

_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "?!.,;:\"'()[]{}"
_LUCENE_SPECIAL = frozenset('+-&|!(){}[]^"~*?:\\/')
_CASE_NON_WORD = re.compile(r"[^0-9A-Za-z]+")
_CASE_ARTICLE = re.compile(r"^(?:the|a|an) ", re.I)
_ARTICLES = frozenset({"the", "a", "an"})
_MIN_WORDS_ALL_CAPS = 3  # from this many words on, a fully capitalised question carries no case cue
_EXACT_ROWS_PER_NAME = 8  # link_exact row cap per looked-up n-gram (titles and tags repeat names)

EmbedderSource = Embedder | Callable[[], Embedder]
"""An embedder, or a zero-argument factory called only when the vector step runs."""


@dataclass(frozen=True, slots=True)
class LinkResult:
    """Ranked linking candidates for one question.

    Attributes:
        candidates: matched entities, best first, one entry per entity id.
    """

    candidates: tuple[LinkedEntity, ...]

    @property
    def topics(self) -> tuple[LinkedEntity, ...]:
        """The best candidate per mention, in rank order (what retrieval starts from).

        Mentions never overlap (the exact step keeps only non-overlapping spans). Full-text and
        vector candidates share one mention, so those steps give one topic. Explicit topic ids are
        all kept.
        """
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


def link(
    store: GraphStore,
    embedder: EmbedderSource,
    question: str,
    *,
    topic_ids: Sequence[str] = (),
    k: int = 5,
    max_ngram: int = 16,
    fulltext_limit: int = 10,
    min_vector_score: float = MIN_VECTOR_SCORE,
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
        lambda: _link_exact(store, question, tokens, max_ngram=max_ngram),
        lambda: _link_fulltext(store, tokens, limit=fulltext_limit),
        lambda: _link_vector(store, embedder, question, tokens, k=k, min_score=min_vector_score),
    ):
        found = step()
        if found:
            log.debug("linked %r via %s: %s", question, found[0].method, [c.id for c in found])
            return LinkResult(found)
    raise EntityNotFoundError(
        f"no entity in the store matches the question {question!r}",
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
    rows = {r["id"]: r for r in store.run(queries.get("entities_get"), {"ids": wanted})}
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
    by_id = {r["id"]: r for r in store.run(queries.get("entities_get"), {"ids": unique})}
    by_norm = _exact_rows(store, {normalise_name(s) for s in unique if s not in by_id})
    found: list[list[LinkedEntity]] = []
    missing = []
    for span in unique:
        if span in by_id:
            row = by_id[span]
            found.append([_entity(row, SCORE_BRACKET, span, "bracket")])
            continue
        rows = _rank_rows(by_norm.get(normalise_name(span), []), span)
        if not rows:
            missing.append(span)
        found.append([_entity(r, SCORE_BRACKET, span, "bracket") for r in rows])
    if missing:
        raise EntityNotFoundError(
            f"no entity matches the bracketed name(s) {', '.join(repr(m) for m in missing)}",
            hint="check the spelling inside the brackets, or pass the entity id with --topic",
        )
    return _interleave(found)


def _link_exact(
    store: GraphStore, question: str, tokens: Sequence[_Token], *, max_ngram: int
) -> tuple[LinkedEntity, ...]:
    spans = _ngrams(question, tokens, max_ngram=max_ngram)
    rows_by_norm = _exact_rows(store, {s.norm for s in spans})
    ranked = [
        (s, _rank_rows(rows_by_norm[s.norm], s.text, raw=s.raw)) for s in spans if s.norm in rows_by_norm
    ]
    chosen: list[tuple[_Span, list[dict[str, Any]]]] = []
    taken: set[int] = set()
    for span, rows in sorted(ranked, key=lambda sr: _span_rank(*sr)):
        if taken.isdisjoint(range(span.start, span.end)):
            taken.update(range(span.start, span.end))
            chosen.append((span, rows))
    if chosen and _span_rank(*chosen[0])[0] == 0:
        # The question capitalises names, so lower-case words are not mentions ("films", "star").
        chosen = [(s, rows) for s, rows in chosen if s.name_like]
    return _interleave([[_entity(r, SCORE_EXACT, s.text, "exact") for r in rows] for s, rows in chosen])


def _ngrams(question: str, tokens: Sequence[_Token], *, max_ngram: int) -> list[_Span]:
    """All word n-grams (n = max_ngram..1) worth looking up.

    Skipped: n-grams with neither a content word nor a name-like token (only stop words and
    1-character tokens: "what is the", "a"), and n-grams that start with a lower-case article,
    whose normalised form equals that of the n-gram without it ("the Fury director" -> "Fury").
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
            norm = normalise_name(text)
            if norm:
                capitalised = any(t.capitalised for t in window)
                spans.append(_Span(i, i + n, raw, text, norm, capitalised, any(t.name_like for t in window)))
    return spans


def _exact_rows(store: GraphStore, norms: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """``link_exact`` rows for all normalised names in one call, grouped by ``name_norm``."""
    names = sorted(set(norms))
    if not names:
        return {}
    rows = store.run(
        queries.get("link_exact"), {"names_norm": names, "limit": _EXACT_ROWS_PER_NAME * len(names)}
    )
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["name_norm"], []).append(row)
    return grouped


def _rank_rows(rows: Sequence[dict[str, Any]], mention: str, *, raw: str = "") -> list[dict[str, Any]]:
    """Order the entities sharing one normalised name by how closely their name matches the mention.

    Identical text first, edge punctuation included ("Moulin Rouge!" over "Moulin Rouge" in
    "who directed Moulin Rouge!", the reverse in "who directed Moulin Rouge?"),
    then the same words in the same letter case ignoring punctuation, then the same case ignoring
    a leading article ("Fury" ~ "The Fury"); the rest by name. So the MetaQA tag "tom hanks" loses
    to the person "Tom Hanks" for the mention "Tom Hanks" and wins for the mention "tom hanks".
    """
    full, bare = _case_key(mention), _case_key(mention, bare=True)

    def key(row: dict[str, Any]) -> tuple[bool, bool, bool, bool, str, str]:
        name = row["name"] or row["id"]
        return (
            name != raw,
            name != mention,
            _case_key(name) != full,
            _case_key(name, bare=True) != bare,
            name,
            row["id"],
        )

    return sorted(rows, key=key)


def _span_rank(span: _Span, rows: Sequence[dict[str, Any]]) -> tuple[int, int, bool, int]:
    """Order of mentions, used to resolve overlaps and to rank the chosen ones.

    1. Tier: capitalised mentions equal to their best entity's name in letter case ("Crazy Heart",
       not the title "Movie Crazy" matched case-insensitively in "the movie Crazy Heart"; "Hell",
       not "In Hell" in "the language spoken in Hell"), then other name-like mentions (capitals or
       digits: "1984"), then the rest ("films", "star").
    2. Longer mentions (in normalised words): "rush hour 2" before "2".
    3. A case-exact match, 4. earlier position.
    """
    best = rows[0]["name"] or rows[0]["id"]
    case_exact = _case_key(best, bare=True) == _case_key(span.text, bare=True)
    tier = 0 if span.capitalised and case_exact else 1 if span.name_like else 2
    return (tier, -len(span.norm.split()), not case_exact, span.start)


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
