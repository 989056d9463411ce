"""Name rules shared by ingest (what gets written), linking (what gets looked up), question files
(bracketed topics) and answer matching."""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata

_NON_WORD = re.compile(r"[^0-9a-z]+")
_ARTICLES = re.compile(r"^(the|a|an) ")
_TYPE_INVALID = re.compile(r"[^0-9A-Za-z_]+")
_PUNCT = str.maketrans("", "", string.punctuation)
_ANSWER_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PLAIN_RELATION = re.compile(r"[^\W\d_]\w*(?:\.\w+)*\Z")
_NON_TYPE = re.compile(r"\W+")

#: A ``[bracketed]`` span (MetaQA's topic-entity convention); group 1 is the text inside.
BRACKET = re.compile(r"\[([^\[\]]*)\]")


def normalise_name(name: str) -> str:
    """Lower-case, accent-free, punctuation-free form used for exact-match linking.

    ``"The Lord of the Rings: The Two Towers"`` -> ``"lord of the rings the two towers"``.
    Underscores count as spaces, so PathQuestion's ``ernest_augustus_i_of_hanover`` matches the
    mention "ernest augustus i of hanover".
    """
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    text = _NON_WORD.sub(" ", text.replace("_", " ")).strip()
    stripped = _ARTICLES.sub("", text)
    return stripped or text


def relationship_type(source_name: str) -> str:
    """The relationship type of a source relation name: readable, and distinct for distinct names.

    A lower-case name of (Unicode) letters, digits and underscores, starting with a letter, in
    dot-separated parts or one, is upper-cased: ``directed_by`` -> ``DIRECTED_BY``,
    ``people.person.nationality`` -> ``PEOPLE.PERSON.NATIONALITY``, ``ümlaut_rel`` ->
    ``ÜMLAUT_REL``, ``导演`` -> ``导演``. Upper-casing is one-to-one on such names because
    lower-casing the result gives the name back. Any other name (``has genre``, ``has-genre``,
    ``HAS_GENRE``, ``---``) is upper-cased with other characters as ``_``, plus ``_h`` and a hash
    of the verbatim name: ``has genre`` -> ``HAS_GENRE_h…``. The lower-case ``h`` never occurs in
    an upper-cased name, so the two kinds never meet, and the hash keeps names that look alike
    apart. Kernels pass the type as a parameter, so any text is a valid type (typed by hand in
    Cypher, one with a dot or a space needs backticks); the verbatim name stays on the
    ``RelationType`` node.
    """
    upper = source_name.upper()
    if _PLAIN_RELATION.match(source_name) and upper.lower() == source_name:
        return upper
    base = _NON_TYPE.sub("_", upper).strip("_") or "REL"
    digest = hashlib.blake2b(source_name.encode("utf-8"), digest_size=5).hexdigest()
    return f"{base}_h{digest}"


#: Labels kgqa gives its own nodes (``Kgqa`` prefixed ones: questions, metadata, ingest progress).
RESERVED_LABELS = frozenset({"Entity", "RelationType"})
RESERVED_LABEL_PREFIX = "Kgqa"


def label_name(type_name: str) -> str:
    """A PascalCase Neo4j label, Unicode letters kept: ``gene/protein`` -> ``GeneProtein``.

    A type that would give one of kgqa's own labels (``entity``, ``relation type``,
    ``kgqa question``) or start with a digit gets a ``T`` in front (``TEntity``,
    ``TKgqaQuestion``, ``T3dStructure``), so a data type never marks an entity as a kgqa node.
    """
    parts = [p for p in _NON_TYPE.sub(" ", type_name).split() if p]
    if not parts:
        raise ValueError(f"node type {type_name!r} has no letters or digits")
    label = "".join(p[:1].upper() + p[1:] for p in parts)
    reserved = label in RESERVED_LABELS or label.startswith(RESERVED_LABEL_PREFIX)
    return f"T{label}" if reserved or label[0].isdigit() else label


def relation_text(source_name: str) -> str:
    """Readable text of a relation, for embedding: the words of its name.

    A Freebase-style name of three or more dotted parts (domain.type.property) is read without
    its domain, which every relation of the domain shares and no question says:
    ``location.country.languages_spoken`` -> ``country languages spoken``,
    ``people.person.nationality`` -> ``person nationality``, ``directed_by`` -> ``directed by``.
    """
    parts = source_name.split(".")
    if len(parts) >= 3 and all(parts):
        source_name = ".".join(parts[1:])
    return re.sub(r"[._/]+", " ", source_name).strip()


def normalize_answer(s: str) -> str:
    """Canonical form for answer matching.

    Underscores become spaces (PathQuestion/WC2014 ids such as ``united_kingdom``), then the
    text is lower-cased, ASCII punctuation is deleted (``"U.S."`` -> ``"us"``), the articles
    a/an/the are removed and whitespace is collapsed.

    >>> normalize_answer("The Lord of the Rings!")
    'lord of rings'
    >>> normalize_answer("united_kingdom")
    'united kingdom'
    """
    s = s.replace("_", " ").lower().translate(_PUNCT)
    s = _ANSWER_ARTICLES.sub(" ", s)
    return " ".join(s.split())
