"""Near misses of names: full-text hits for the words no exact match covers, kept with the
question n-gram they match within a typo."""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz import process
from rapidfuzz.distance import OSA

from kgqa.link.exact import rank_rows
from kgqa.link.matches import Match
from kgqa.link.tokens import EDGE_PUNCT, Span, Token, escape_lucene
from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.protocol import GraphStore

MAX_FUZZY_QUALITY = 0.999  # a fuzzy match never ties an exact one
TYPO_EDITS = 1  # edits a misspelt word may be away from the name's word (one typo: one OSA edit)


def fuzzy_matches(
    store: GraphStore,
    tokens: Sequence[Token],
    spans: Sequence[Span],
    leftover: Sequence[int],
    *,
    limit: int,
    uncased: bool,
) -> list[Match]:
    """Full-text hits for the ``leftover`` words, each kept with its best-matching question n-gram.

    The leftover words of 4+ letters are sent as fuzzy terms (``TYPO_EDITS``: a typo is one
    edit), their neighbours as plain terms, so a name with one misspelt word among
    matched ones ranks high ("santa fe tril" -> Santa Fe Trail). Each hit is kept with the n-gram
    it matches best (:func:`_best_span`, "tom hank" ~ "tom hanks": 0.89), or dropped. Partial
    names ("zemeckis") are left to the full-text step.
    """
    fuzzy = set(leftover)
    words = {
        tokens[i].text.strip(EDGE_PUNCT).lower(): i in fuzzy
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
    ranked = rank_rows([row for row in rows if id(row) in found], "", uncased=uncased)
    return [Match(found[id(row)][0], row, found[id(row)][1], cue, "typo") for row, cue in ranked]


class _SpansByWords:
    """Question spans grouped by word count, with their normalised and space-free forms, for
    rapidfuzz's batch scoring."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.spans: dict[int, list[Span]] = {}
        for span in spans:
            self.spans.setdefault(len(span.words_norm), []).append(span)
        self.norms = {n: [s.norm for s in group] for n, group in self.spans.items()}
        self.joined = {n: [s.norm.replace(" ", "") for s in group] for n, group in self.spans.items()}


def _fuzzy_term(word: str) -> str:
    """A Lucene term for one question word: ``word~1`` from 4 letters, else the word."""
    escaped = escape_lucene(word)
    return f"{escaped}~{TYPO_EDITS}" if len(word) >= 4 else escaped


def _best_span(name_norm: str, spans: _SpansByWords, known: set[str]) -> tuple[Span, float] | None:
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
    ("forest gump": 0.92, "osaar" -> Oscar: 0.8). A name's initials may be spelt out, each
    counted as an edit (:func:`_initials_spelt_out`: "george herbert walker bush" ~ George H. W.
    Bush, 0.87).
    """
    name_words = name_norm.split()
    n = len(name_words)
    candidates: list[tuple[Span, int]] = []
    for _, edits, i in process.extract(
        name_norm, spans.norms.get(n, []), scorer=OSA.distance, score_cutoff=TYPO_EDITS * n, limit=None
    ):
        if edits == 0:  # the name itself: the exact step looked it up and ranked it already
            continue
        words = spans.spans[n][i].words_norm
        if n == 1 and words[0] in known and words[0] != name_words[0]:
            continue
        if all(
            a == b or (min(len(a), len(b)) >= 4 and OSA.distance(a, b) <= TYPO_EDITS)
            for a, b in zip(words, name_words, strict=True)
        ):
            candidates.append((spans.spans[n][i], int(edits)))
    if n > 1 and any(len(word) == 1 for word in name_words):  # "george herbert walker bush"
        for span in spans.spans.get(n, []):
            expanded = _initials_spelt_out(span.words_norm, name_words)
            if expanded:
                candidates.append((span, expanded))
    joined = name_norm.replace(" ", "")
    if len(joined) >= 6:  # a word split or joined at punctuation: "twelve oclock high"
        for m in (n - 1, n + 1):
            for _, edits, i in process.extract(
                joined, spans.joined.get(m, []), scorer=OSA.distance, score_cutoff=1, limit=None
            ):
                candidates.append((spans.spans[m][i], int(edits)))
    best: tuple[Span, float] | None = None
    for span, edits in candidates:
        quality = 1.0 - edits / len(name_norm)
        if best is None or (quality, len(span.norm)) > (best[1], len(best[0].norm)):
            best = (span, min(quality, MAX_FUZZY_QUALITY))
    return best


def _initials_spelt_out(words: Sequence[str], name_words: Sequence[str]) -> int:
    """How many of a name's initials the question's ``words`` spell out, word for word, where
    every other word is the name's own and one at least is ("john fitzgerald kennedy" ~ john f
    kennedy: 1); 0 where they do not match so. People write out the middle names a KB keeps as
    initials."""
    spelt = kept = 0
    for word, name_word in zip(words, name_words, strict=True):
        if word == name_word:
            kept += len(word) > 1
        elif len(name_word) == 1 and len(word) > 1 and word[0] == name_word:
            spelt += 1
        else:
            return 0
    return spelt if kept else 0
