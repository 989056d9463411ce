"""The question as words: tokens with their case cues, the word n-grams looked up as
mentions, and the letter-case keys names are compared by."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from kgqa.linking_words import RelationWords, strip_possessive
from kgqa.names import normalise_name

#: Words that never name an entity on their own: question words, articles, auxiliaries, pronouns,
#: prepositions and verb particles ("come out" is one word beside "titanic", no name of two words
#: that outranks it). An n-gram made only of these (or of 1-character tokens) is not looked up.
STOP_WORDS = frozenset(
    """
    a an the and or not of in on at to for from by with about as into onto over under
    what which who whom whose when where why how
    is are was were be been being do does did done has have had can could would should will shall may
    i me my we our you your he him his she her it its they them their this that these those there
    also any all some each other same than then
    out up off
    """.split()
)


_TOKEN = re.compile(r"\S+")
EDGE_PUNCT = "?!.,;:\"'()[]{}"
_LUCENE_SPECIAL = frozenset('+-&|!(){}[]^"~*?:\\/')
_CASE_NON_WORD = re.compile(r"[^0-9A-Za-z]+")
_CASE_ARTICLE = re.compile(r"^(?:the|a|an) ", re.I)
ARTICLES = frozenset({"the", "a", "an"})
#: Question words whose noun names the answers' kind ("what country", "which films").
ASKING_WORDS = frozenset({"what", "which"})
#: Nouns that say "a kind of" the noun after them ("what kind of music").
KIND_FRAMES = frozenset({"kind", "kinds", "type", "types", "sort", "sorts"})
_MIN_WORDS_ALL_CAPS = 3  # from this many words on, a fully capitalised question carries no case cue


@dataclass(frozen=True, slots=True)
class Token:
    """One whitespace-separated word of the question."""

    text: str
    start: int  # character offset in the question
    word: str  # normalised like Entity.name_norm
    content: bool  # not a stop word and longer than one character
    capitalised: bool  # has an upper-case letter (not the question's first) in a cased question
    name_like: bool  # capitalised or holds a digit


@dataclass(frozen=True, slots=True)
class Span:
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


def tokenize(question: str) -> list[Token]:
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
        tokens.append(Token(text, start, word, content, capitalised, name_like))
    return tokens


def ngrams(
    question: str, tokens: Sequence[Token], *, max_ngram: int, relation_words: RelationWords | None = None
) -> list[Span]:
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
            if window[0].text in ARTICLES:
                continue
            last = window[-1]
            raw = question[window[0].start : last.start + len(last.text)]
            text = raw.strip(EDGE_PUNCT) or raw
            bare = strip_possessive(text)
            for variant in (text,) if bare is None else (text, bare):
                norm = normalise_name(variant)
                if not norm:
                    continue
                words_norm = tuple(norm.split())
                content = [w for w in words_norm if w not in STOP_WORDS and len(w) > 1]
                relational = relation_words is not None and relation_words.share(content) >= 1.0
                spans.append(
                    Span(
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


def content_words(tokens: Sequence[Token]) -> list[str]:
    """Lower-cased content words (edge punctuation stripped), deduplicated, in question order."""
    words = (t.text.strip(EDGE_PUNCT).lower() for t in tokens if t.content or t.name_like)
    return list(dict.fromkeys(w for w in words if w))


def case_key(text: str, *, bare: bool = False) -> str:
    """Accent- and punctuation-free form that keeps letter case: ``"Moulin Rouge!"`` -> ``"Moulin Rouge"``.

    With ``bare`` a leading article is dropped too (``"The Fury"`` -> ``"Fury"``).
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    key = _CASE_NON_WORD.sub(" ", ascii_text.replace("_", " ")).strip()
    return (_CASE_ARTICLE.sub("", key) or key) if bare else key


def is_proper(name: str) -> bool:
    """A name the KB writes with capitals or digits ("Jaws", "1994"), unlike a tag ("director")."""
    return any(ch.isupper() or ch.isdigit() for ch in name)


def escape_lucene(text: str) -> str:
    """Backslash-escape Lucene query syntax characters (``+ - & | ! ( ) { } [ ] ^ " ~ * ? : \\ /``).

    ``"AC/DC: Live!"`` -> ``"AC\\/DC\\: Live\\!"``. Operator words (AND, OR, NOT) are not touched;
    lower-case them or drop them before building a query.
    """
    return "".join(f"\\{ch}" if ch in _LUCENE_SPECIAL else ch for ch in text)


def asks_kinds_of(words: Sequence[str]) -> bool:
    """Whether ``words`` (lower case) are "what / which kind / type / sort of": the noun after
    them names a class whose kinds are the answers ("what type of cancer": Cervical cancer), not
    a thing the answers are of or tied to."""
    return len(words) == 3 and words[0] in ASKING_WORDS and words[1] in KIND_FRAMES and words[2] == "of"
