"""People's words for entities, read off the graph: relation words, partial names, possessives,
demonyms and acronyms.

A question typed by a person rarely spells its topic as the graph names it: "what language do
jamaican people speak?" (Jamaica), "where did franklin's brother work?" (Benjamin Franklin), "what
countries make up the uk?" (United Kingdom). Nothing here is a word list written for a data set;
each rule compares the question's words with the graph's own names:

- relation words (:class:`RelationWords`): the words of the graph's relation type names
  (``location.country.languages_spoken`` -> location, country, languages, spoken). A question
  word among them ("language", "currency", "official language") describes the relation asked
  for, so it is a weak topic even where an entity bears that name;
- partial names (:func:`partial_name_quality`): the mention's words are a run of a longer name's
  words ("franklin" -> Benjamin Franklin, "ben franklin" -> Benjamin Franklin);
- possessives (:func:`strip_possessive`): "franklin's" is looked up as "franklin";
- demonyms (:func:`demonym_stem`, :func:`is_demonym_of`): a word that extends a one-word name's
  stem ("jamaican" -> Jamaica, "egyptian" -> Egypt, "brazilians" -> Brazil), or a doctrine's
  name less its "-ism" ("buddhist" -> Buddhism, "catholic" -> Catholicism);
- acronyms (:func:`is_acronym_of`): the initials of a name's words ("uk" -> United Kingdom).

:mod:`kgqa.link` decides between the readings with the popularity prior (an entity's degree).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kgqa.store import queries
from kgqa.store.protocol import GraphStore

if TYPE_CHECKING:
    from torch import Tensor

    from kgqa.embed.protocol import Embedder

LARGE_SCHEMA = 100  # relation types from which a relation word must occur in two of them
RELATION_NAMES_LIMIT = 100_000  # relation types read for their words (Freebase has ~10k)
MAX_EXTRA_WORDS = 2  # words of a name a partial mention may leave out ("Henry VIII of England")
#: Cosine from which a question word may be another form of a relation word (:meth:`RelationWords.with_near`):
#: chosen on WebQSP-evidence's training and validation parts, where 0.5-0.65 gave the same links.
NEAR_RELATION_WORD = 0.6
#: Letters the two forms must start with alike: "speak" / "speech", "compose" / "composition";
#: without it place names read as their kind ("japan" / "country" 0.66).
SHARED_STEM = 3
#: English inflections a relation word may carry ("directed", "starring"), longest first: what
#: :meth:`RelationWords.with_forms` strips to find the stem other forms of the word share.
INFLECTIONS = ("ing", "ed")
#: Letters a relation word's stem keeps at least for its other forms to count: "direct"
#: (directed) and "starr" (starred) do, "us" (used) would make "usa" a relation word.
MIN_FORM_STEM = 5
MIN_PREFIX_LETTERS = 3  # "ben" stands for Benjamin; shorter is an initial, not a name
MIN_DEMONYM_STEM = 4  # letters a demonym shares with its place at least ("egyp" in egyptian/Egypt)
DEMONYM_SUFFIX_MAX = 4  # letters a demonym adds after the stem at most ("-ians" in brazilians)
DOCTRINE = "ism"  # a doctrine's name, which its follower's word shares less this ("buddhist")
#: How an English people's or place's word ends after the letters it shares with the place's name
#: (a plural "s" aside): a closed set of English derivational endings, as the function words are
#: a closed set of words. "-an" ("tibet-an", "egypt-ian", "europe-an", "peru-vian"), "-ese"
#: ("malt-ese", "portug-uese"), whole "-ish", "-i", "-ic" ("swed-ish", "israel-i", "islam-ic"),
#: and "-n" after a vowel ("jamaica-n"). Other endings read no people: "princess" is not of
#: Prince, "currently" not of Currency, "modern" not of Mode.
DEMONYM_ENDS, DEMONYM_WHOLE_ENDINGS = ("an", "ese"), frozenset({"ish", "i", "ic"})
_WORD = re.compile(r"[a-z0-9]+")
_IDENTIFIER = re.compile(r"^[A-Za-z0-9_.:/-]+$")
_POSSESSIVE = re.compile(r"(?<=\w)(?:['\u2019]s|s['\u2019])$", re.I)
_ACRONYM_SKIP = frozenset({"of", "the", "and", "a", "an", "for", "in", "on", "de"})
#: A Roman numeral in lower case, up to 3999 ("ii", "xliii"; the empty string too: callers ask
#: for letters). Read by acronyms here and by the numbered series of ``kgqa.reasoning.recency``.
ROMAN_NUMERAL = re.compile(r"m{0,3}(?:c[md]|d?c{0,3})(?:x[cl]|l?x{0,3})(?:i[xv]|v?i{0,3})")


@dataclass(frozen=True, slots=True)
class RelationWords:
    """Words of the graph's relation type names, lower case, in their naive singular form.

    Attributes:
        words: the words; a question word found here names a relation rather than a topic.
        vectors: FloatTensor [W, d], the unit embeddings of ``vector_words`` (:meth:`embedded`),
            or None: what :meth:`with_near` compares a question's words with.
        vector_words: ``sorted(words)`` when ``vectors`` is set.
        near_cache: per question word already compared, whether it is near a relation word: a
            process links many questions, and their words repeat.
    """

    words: frozenset[str]
    vectors: Tensor | None = field(default=None, compare=False, repr=False)
    vector_words: tuple[str, ...] = field(default=(), compare=False, repr=False)
    near_cache: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_store(cls, store: GraphStore, *, limit: int = RELATION_NAMES_LIMIT) -> RelationWords:
        """Read every relation type's name (``link_relation_names``) and split it into words."""
        rows = store.run(queries.get("link_relation_names"), {"limit": limit})
        return cls.from_names(row.get("source_name") or row["name"] for row in rows)

    @classmethod
    def from_names(cls, names: Iterable[str]) -> RelationWords:
        """Words of relation names such as ``location.country.languages_spoken`` or ``ACTED_IN``.

        A name is split at white space and commas first, and only identifier-like pieces count
        (mixed-case pieces such as "Duke" in a malformed "1st Duke of Richmond,people.person.parents"
        are entity names that slipped into a relation column, not relation words). In a schema of
        ``LARGE_SCHEMA`` types or more, a word must occur in two types: a word only one type uses
        is that type's own ("australian" in ``location.australian_state.capital_city``), not a
        word people use for relations.
        """
        types: dict[str, int] = {}
        count = 0
        for name in names:
            count += 1
            words: set[str] = set()
            for piece in re.split(r"[\s,]+", name):
                if not piece or not _IDENTIFIER.match(piece):
                    continue
                if piece != piece.lower() and piece != piece.upper():
                    continue
                words.update(
                    singular(w) for w in _WORD.findall(piece.lower()) if len(w) > 1 and not w.isdigit()
                )
            for word in words:
                types[word] = types.get(word, 0) + 1
        least = 2 if count >= LARGE_SCHEMA else 1
        return cls(frozenset(w for w, n in types.items() if n >= least))

    def embedded(self, embedder: Embedder) -> RelationWords:
        """These words with their embeddings (one batch; MetaQA has 15 words, WebQSP-evidence 642)."""
        import torch

        words = tuple(sorted(self.words))
        vectors = torch.nn.functional.normalize(embedder.embed(words), dim=-1)
        return replace(self, vectors=vectors, vector_words=words, near_cache={})

    def with_near(self, question_words: Sequence[str], embedder: Embedder) -> RelationWords:
        """These words and the ``question_words`` within :data:`NEAR_RELATION_WORD` cosine of one
        of them that start with its first :data:`SHARED_STEM` letters (needs :meth:`embedded`;
        self when none is near, else a copy without vectors).

        Why: people name a relation with other forms of its words ("speak" for
        ``languages_spoken``, "marry" for ``marriage``, "compose" for ``composition``), which
        no spelling rule derives, and a lone word that names a relation ("where do they speak
        german") is no topic even where a title bears it (the film "Speak").
        """
        import torch

        fresh = [w for w in dict.fromkeys(question_words) if len(w) > 2 and singular(w) not in self.words]
        if self.vectors is None or not fresh:
            return self
        unseen = [w for w in fresh if w not in self.near_cache]
        if unseen:
            vectors = torch.nn.functional.normalize(embedder.embed(unseen), dim=-1)
            close = (vectors @ self.vectors.T >= NEAR_RELATION_WORD).nonzero().tolist()
            stem = SHARED_STEM
            found = {unseen[i] for i, j in close if unseen[i][:stem] == self.vector_words[j][:stem]}
            self.near_cache.update((w, w in found) for w in unseen)
        near = {singular(w) for w in fresh if self.near_cache[w]}
        return replace(self, words=self.words | near, vectors=None) if near else self

    def with_forms(self, question_words: Sequence[str]) -> RelationWords:
        """These words and the ``question_words`` that begin with a relation word's stem, the word
        less an English inflection (:data:`INFLECTIONS`), where that stem keeps
        :data:`MIN_FORM_STEM` letters or more: "director" and "directors" of ``directed_by``
        ("direct"), "starring" of ``starred_actors``. Self when none does.

        Why: the embedding model does not always put a relation word's derived forms within
        :data:`NEAR_RELATION_WORD` of it ("director" / "directed" 0.57), and a lone lower-case word
        that names a relation is otherwise a topic where some tag or title bears it ("what types
        are the films directed by the director of cuba" linked the tag "director", not Cuba).
        """
        stems = {stem for w in self.words if len(stem := inflection_stem(w)) >= MIN_FORM_STEM}
        forms = {
            singular(w)
            for w in question_words
            if singular(w) not in self.words and any(w.startswith(stem) for stem in stems)
        }
        return replace(self, words=self.words | forms) if forms else self

    def share(self, words: Sequence[str]) -> float:
        """Fraction of ``words`` (normalised question words) that are relation words, in [0, 1]."""
        if not words:
            return 0.0
        return sum(singular(w) in self.words for w in words) / len(words)


def inflection_stem(word: str) -> str:
    """``word`` less its English inflection (:data:`INFLECTIONS`: "directed" -> "direct",
    "starred" -> "starr"), or ``word`` where it has none."""
    for ending in INFLECTIONS:
        if word.endswith(ending):
            return word[: -len(ending)]
    return word


def singular(word: str) -> str:
    """A naive singular: "languages" -> "language", "countries" -> "country"; short words kept."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def strip_possessive(text: str) -> str | None:
    """``text`` without a trailing possessive, or None when it has none.

    ``"franklin's"`` -> ``"franklin"``, ``"the kennedys'"`` -> ``"the kennedy"``.
    """
    stripped = _POSSESSIVE.sub("", text)
    return stripped if stripped != text else None


def partial_name_quality(mention_words: Sequence[str], name_words: Sequence[str]) -> float:
    """How well a mention names an entity by part of its name, in [0, 1); 0 when it does not.

    The mention's words must be a run of the name's words in order, each equal, except that a
    word followed by others may be a 3+-letter prefix ("ben franklin" -> benjamin franklin); a
    mention of several words may pass over middle names ("william taft" -> william howard taft,
    "niels bohr" -> niels henrik david bohr), at most ``MAX_EXTRA_WORDS`` in all, initials not
    counted ("tolkien" -> J. R. R. Tolkien, "bush" -> George H. W. Bush). The last word
    must be equal: a surname or a head noun, never a prefix ("bill" is no "billy"). A one-word
    mention starts the name or ends it but for a short tail ("franklin", "tupac", "nike" of Nike,
    Inc.), so "last" is no name for "The Last Song". The quality is the share of the name's
    letters the mention covers, capped below 1 (an exact match is 1): "franklin" -> Benjamin
    Franklin 0.53. A first word of 2-3 letters followed by others may spell the initials of the
    name's words ("ny giants" -> New York Giants, :func:`_initials_expanded`).
    """
    m, n = len(mention_words), len(name_words)
    if not m or m > n or list(mention_words) == list(name_words):
        return 0.0
    expanded = _initials_expanded(mention_words, name_words)
    if expanded is not None and (expanded == list(name_words) or partial_name_quality(expanded, name_words)):
        return min(sum(len(w) for w in mention_words) / sum(len(w) for w in name_words), 0.999)
    if sum(w not in _ACRONYM_SKIP and len(w) > 1 for w in name_words) - m > MAX_EXTRA_WORDS:
        return 0.0
    gaps = MAX_EXTRA_WORDS if m > 1 else 0
    for start in range(n - m + 1):
        for stop in range(start + m, min(n, start + m + gaps) + 1):
            window = name_words[start:stop]
            if window[-1] != mention_words[-1] or not _names_in_order(mention_words[:-1], window[:-1]):
                continue
            if not (m > 1 or _is_name_tail(name_words[stop:]) or not name_words[:start]):
                continue
            covered = sum(len(w) for w in mention_words)
            return min(covered / sum(len(w) for w in name_words), 0.999)
    return 0.0


def _initials_expanded(mention_words: Sequence[str], name_words: Sequence[str]) -> list[str] | None:
    """The mention with its first word read as the initials of the name's words it spells, where
    that word has 2-3 letters, is no word of the name and more words follow ("ny giants" ->
    new york giants, "la kings" -> los angeles kings); None otherwise."""
    first = mention_words[0]
    if len(mention_words) < 2 or not 2 <= len(first) <= 3 or not first.isalpha() or first in name_words:
        return None
    for start in range(len(name_words) - len(first) + 1):
        spelt = name_words[start : start + len(first)]
        if "".join(w[0] for w in spelt) == first:
            return [*spelt, *mention_words[1:]]
    return None


def _names_in_order(mention_words: Sequence[str], name_words: Sequence[str]) -> bool:
    """Whether the mention's words name the first of ``name_words`` and then others in order
    (each equal or a 3+-letter prefix), the rest passed over."""
    if not mention_words:
        return not name_words
    if not name_words or not _names_word(mention_words[0], name_words[0]):
        return False
    rest = iter(name_words[1:])
    return all(any(_names_word(word, name) for name in rest) for word in mention_words[1:])


def _names_word(word: str, name: str) -> bool:
    return word == name or (len(word) >= MIN_PREFIX_LETTERS and name.startswith(word))


def _is_name_tail(words: Sequence[str]) -> bool:
    """Whether the words a one-word mention leaves at one end of a name may go unsaid: none,
    short words ("jr", "inc", "f c", "the") or an "of" phrase ("of england")."""
    return not words or words[0] == "of" or all(len(w) <= 3 for w in words)


def demonym_stem(word: str) -> str | None:
    """The stem a demonym or adjective shares with its place's name, or None for a short word.

    ``"jamaican"`` -> ``"jama"``, ``"portuguese"`` -> ``"portug"``: the word less up to
    ``DEMONYM_SUFFIX_MAX`` letters, at least ``MIN_DEMONYM_STEM``.
    """
    if len(word) < MIN_DEMONYM_STEM + 2 or not word.isalpha():
        return None
    return word[: max(MIN_DEMONYM_STEM, len(word) - DEMONYM_SUFFIX_MAX)]


def is_demonym_of(word: str, name_norm: str) -> bool:
    """Whether ``word`` reads as a demonym or adjective of a one-word name.

    The name must be one word, shorter than the word, that shares its first letters up to at
    most two letters of the name, and the word's letters after those must end as a demonym does
    (:data:`DEMONYM_ENDS`, :data:`DEMONYM_WHOLE_ENDINGS`): "jamaican" ~ jamaica, "egyptian" ~
    egypt, "brazilians" ~ brazil, "portuguese" ~ portugal, "maltese" ~ malta; not "jamaican" ~
    jamarcus, "george" ~ georgia, "princess" ~ prince nor "currently" ~ currency. A doctrine's
    name (``-ism``) is read from its follower's word, the name less its suffix and then nothing
    or a suffix of the ``-ist`` / ``-ic`` / ``-ian`` kind: "buddhist" ~
    buddhism, "catholic" ~ catholicism, "communists" ~ communism; not "buddha" ~ buddhism.
    """
    if " " in name_norm:
        return False
    stem = name_norm.removesuffix(DOCTRINE)
    if stem != name_norm and len(stem) >= MIN_DEMONYM_STEM and word.startswith(stem):
        rest = word[len(stem) :]
        return len(rest) <= DEMONYM_SUFFIX_MAX and (not rest or rest.startswith(DOCTRINE[0]))
    if len(name_norm) >= len(word):
        return False
    common = len(_common_prefix(word, name_norm))
    rest = word[common:].removesuffix("s")
    ending = (
        rest.endswith(DEMONYM_ENDS)
        or rest in DEMONYM_WHOLE_ENDINGS
        or (rest == "n" and word[common - 1] in "aeiou")
    )
    return common >= MIN_DEMONYM_STEM and len(name_norm) - common <= 2 and len(word) - common <= 5 and ending


def _common_prefix(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[:i]


def is_acronym_of(word: str, name_norm: str) -> bool:
    """Whether ``word`` (2+ letters) spells the initials of a name's words, with or without its
    small words, or of the words before "of": "uk" ~ united kingdom, "usa" and "us" ~ united states
    of america, "jfk" ~ john f kennedy; a Roman numeral is spelt whole: "wwii" ~ world war ii."""
    words = name_norm.split()
    if len(word) < 2 or len(words) < 2 or not word.isalpha():
        return False
    every = "".join(w[0] for w in words)
    content = "".join(w[0] for w in words if w not in _ACRONYM_SKIP)
    head = "".join(w[0] for w in words[: words.index("of")]) if "of" in words[1:] else ""
    numbered = "".join(w if len(w) > 1 and ROMAN_NUMERAL.fullmatch(w) else w[0] for w in words)
    return word in (every, content, head, numbered)


def popularity(degree: int | None) -> float:
    """The popularity prior of an entity: log(1 + degree), 0 for an unknown degree."""
    return math.log1p(max(degree or 0, 0))
