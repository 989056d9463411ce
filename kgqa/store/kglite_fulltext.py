"""Fuzzy full-text search for the embedded store: Lucene's ``term~N`` served in process.

Why: Neo4j's full-text indexes are Lucene indexes, where ``stuatr~1 beattie`` finds "Stuart
Beattie" (Damerau edit distance 1). kglite's full-text index drops the ``~`` operator and matches
``stuatr`` literally, so a typo'd question finds nothing there. On kglite a full-text call whose
query holds a fuzzy term is therefore answered here instead, the way ``kglite_vectors`` answers
vector calls:

- the index's words are the ``name_norm`` words of its label (the same normalisation linking
  uses), loaded on the first fuzzy query and dropped on any write;
- each query term matches the index words within its edit budget (``term~`` = 2, ``term~N`` = N,
  a plain term only itself) by optimal-string-alignment distance. One edit, what a typo is and
  what the linker asks for words of 4-7 letters, is looked up by spelling out every string one
  edit from the term (a deletion, a swap of neighbours, a letter of the index's alphabet
  replaced or inserted: Norvig's spelling corrector) and keeping those the index holds: tenths
  of a millisecond a term, where scanning the 27k words of the MetaQA KB with rapidfuzz took
  about 1 ms, and nothing to build first (a deletion neighbourhood of the same words, SymSpell's
  index, took 0.65 s to build at each process's first fuzzy query, most of a one-question
  ``kgqa ask``'s linking; its pickle loaded in 0.55 s, so saving it would not help). Two edits
  scan the words of a similar length with rapidfuzz (a two-deletion neighbourhood took 2 s to
  build under load);
- a node scores, per query term, the best ``idf(word) * (1 - edits / len(term))`` among its
  words, summed over the terms (Lucene's fuzzy boost times an inverse document frequency), and
  the call is rewritten to ``UNWIND $__hits ... MATCH (node) WHERE elementId(node) = ...`` so the
  rest of the kernel still runs in kglite.

Scores are relevance values like Lucene's: compare them only within one result list.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from rapidfuzz import process
from rapidfuzz.distance import OSA

from kgqa.names import normalise_name
from kgqa.store.mapping import quote

QUERY_NODES = re.compile(
    r"CALL\s+db\.index\.fulltext\.queryNodes\(\s*'(?P<name>\w+)'\s*,\s*\$(?P<query>\w+)\s*,\s*"
    r"\{\s*limit\s*:\s*\$(?P<limit>\w+)\s*\}\s*\)\s*YIELD\s+node\s*,\s*score",
    re.I,
)
_FUZZY_TERM = re.compile(r"(?<!\\)~(\d*)(?=\s|$)")
_ESCAPE = re.compile(r"\\(.)")
_OPERATORS = frozenset({"AND", "OR", "NOT", "&&", "||"})
DEFAULT_EDITS = 2  # Lucene's ``term~`` without a number


def is_fuzzy(query: str) -> bool:
    """True when the Lucene query holds a fuzzy term (``word~`` or ``word~N``)."""
    return _FUZZY_TERM.search(query) is not None


def parse_terms(query: str) -> list[tuple[str, int]]:
    """``(normalised word, allowed edits)`` per term of a Lucene query of plain and fuzzy terms.

    ``"stuatr~1 beattie"`` -> ``[("stuatr", 1), ("beattie", 0)]``. Operators and escapes are
    dropped; a term that normalises to several words (``AC\\/DC``) gives each of them.
    """
    terms = []
    for raw in query.split():
        if raw in _OPERATORS:
            continue
        fuzzy = _FUZZY_TERM.search(raw)
        edits = 0
        if fuzzy is not None:
            edits = int(fuzzy.group(1)) if fuzzy.group(1) else DEFAULT_EDITS
            raw = raw[: fuzzy.start()]
        for word in normalise_name(_ESCAPE.sub(r"\1", raw)).split():
            terms.append((word, edits))
    return terms


class FuzzyNameIndex:
    """Word -> nodes index over one label's normalised names, loaded lazily through ``read``.

    Args:
        read: runs a read statement with params on the graph and returns its rows.
        label: the node label the full-text index covers.
        norm_property: the property holding normalised names (``kgqa_name_norm`` on a mapped graph).
    """

    def __init__(
        self,
        read: Callable[[str, dict[str, Any]], list[dict[str, Any]]],
        label: str,
        *,
        norm_property: str = "name_norm",
    ) -> None:
        self._read = read
        self._label = label
        self._norm = norm_property
        self._eids: list[str] = []
        self._postings: dict[str, list[int]] = {}
        self._alphabet = ""
        self._by_length: dict[int, list[str]] = {}

    def _load(self) -> None:
        rows = self._read(
            f"MATCH (n:{quote(self._label)}) WHERE n.{quote(self._norm)} IS NOT NULL "
            f"RETURN elementId(n) AS eid, n.{quote(self._norm)} AS norm",
            {},
        )
        postings: dict[str, list[int]] = defaultdict(list)
        for i, row in enumerate(rows):
            for word in dict.fromkeys(str(row["norm"]).split()):
                postings[word].append(i)
        by_length: dict[int, list[str]] = defaultdict(list)
        for word in postings:
            by_length[len(word)].append(word)
        self._eids, self._postings = [r["eid"] for r in rows], dict(postings)
        self._alphabet, self._by_length = "".join(sorted(set("".join(postings)))), by_length

    def _matches(self, term: str, edits: int) -> list[tuple[str, int]]:
        """Index words within ``edits`` of ``term``, with their distance."""
        if edits == 0:
            return [(term, 0)] if term in self._postings else []
        if edits == 1:
            near = _one_edit(term, self._alphabet)
            return [(word, 0 if word == term else 1) for word in near if word in self._postings]
        hits: list[tuple[str, int]] = []
        for length in range(len(term) - edits, len(term) + edits + 1):
            words = self._by_length.get(length)
            if words:
                matched = process.extract(term, words, scorer=OSA.distance, score_cutoff=edits, limit=None)
                hits.extend((word, int(dist)) for word, dist, _ in matched)
        return hits

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        """Hits ``{eid, score}``, best first (ties by index order), at most ``limit``."""
        if not self._eids:
            self._load()
        total = len(self._eids)
        scores: dict[int, float] = defaultdict(float)
        for term, edits in parse_terms(query):
            best: dict[int, float] = {}
            for word, dist in self._matches(term, edits):
                postings = self._postings[word]
                weight = math.log(1.0 + total / len(postings)) * (1.0 - dist / max(len(term), 1))
                for node in postings:
                    if weight > best.get(node, 0.0):
                        best[node] = weight
            for node, weight in best.items():
                scores[node] += weight
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: max(limit, 0)]
        return [{"eid": self._eids[node], "score": score} for node, score in ranked]


def _one_edit(word: str, alphabet: str) -> set[str]:
    """``word`` and every string one optimal-string-alignment edit from it over ``alphabet``: a
    letter deleted, two neighbours swapped, a letter replaced or inserted."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deleted = {head + tail[1:] for head, tail in splits if tail}
    swapped = {head + tail[1] + tail[0] + tail[2:] for head, tail in splits if len(tail) > 1}
    replaced = {head + letter + tail[1:] for head, tail in splits if tail for letter in alphabet}
    inserted = {head + letter + tail for head, tail in splits for letter in alphabet}
    return {word} | deleted | swapped | replaced | inserted
