"""Name rules shared by ingest (what gets written), linking (what gets looked up), question files
(bracketed topics) and answer matching."""

from __future__ import annotations

import re
import string
import unicodedata

_NON_WORD = re.compile(r"[^0-9a-z]+")
_ARTICLES = re.compile(r"^(the|a|an) ")
_TYPE_INVALID = re.compile(r"[^0-9A-Za-z_]+")
_PUNCT = str.maketrans("", "", string.punctuation)
_ANSWER_ARTICLES = re.compile(r"\b(a|an|the)\b")

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
    """A valid Neo4j relationship type for a source relation name.

    ``directed_by`` -> ``DIRECTED_BY``; ``people.person.nationality`` -> ``PEOPLE_PERSON_NATIONALITY``.
    The verbatim name is kept on the ``RelationType`` node.
    """
    upper = _TYPE_INVALID.sub("_", source_name.strip()).strip("_").upper()
    if not upper:
        raise ValueError(f"relation name {source_name!r} has no letters or digits")
    return upper if not upper[0].isdigit() else f"R_{upper}"


def label_name(type_name: str) -> str:
    """A valid Neo4j label (PascalCase) for a source node type: ``gene/protein`` -> ``GeneProtein``."""
    parts = [p for p in _TYPE_INVALID.sub(" ", type_name).split() if p]
    if not parts:
        raise ValueError(f"node type {type_name!r} has no letters or digits")
    label = "".join(p[:1].upper() + p[1:] for p in parts)
    return label if not label[0].isdigit() else f"T{label}"


def relation_text(source_name: str) -> str:
    """Readable text of a relation, for embedding.

    ``people.person.nationality`` -> ``people person nationality``.
    """
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
