"""The kinds of things a graph's relation names say its entities are.

Freebase names a property ``domain.type.property`` and gives it subjects of that type only
(``location.country.languages_spoken``: its heads are countries), so the relations an entity
heads say what it is: Nepal heads ``location.country.*`` facts, Kapilavastu only
``location.location.*`` ones (:func:`head_kind`). A plain relation name says what it points at
instead, by its last noun: the tails of ``plays_in_club`` are clubs, of ``release_year`` years,
of ``place_of_birth`` places (:func:`tail_kind`). A name ending in a preposition or participle
(``directed_by``, ``born_in``, ``is_aged``) says neither.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import torch

from kgqa.names import relation_text
from kgqa.store import queries
from kgqa.store.protocol import GraphStore

#: Entities with more relationships than this are not read for their kinds
#: (:func:`heads_of_types`): a read walks at most this many relationships an entity, whatever
#: the hubs of a user's graph hold. The countries of WebQSP-evidence's KB have up to ~2,400.
KIND_LOOKUP_MAX_DEGREE = 10_000


def head_kind(relation_type: str) -> str | None:
    """The kind of thing every head of ``relation_type`` is, as lower-case words, where its name
    says it (the part before the last of three or more dotted parts); None otherwise.

    >>> head_kind("LOCATION.US_STATE.CAPITAL")
    'us state'
    >>> head_kind("base.popstra.celebrity.dated")
    'celebrity'
    >>> head_kind("directed_by") is None
    True
    """
    parts = relation_type.split(".")
    if len(parts) < 3 or not all(parts):
        return None
    return parts[-2].replace("_", " ").lower()


#: Last words of a plain relation name that name no kind: prepositions ("directed_by"), verbs
#: that name nothing ("was_of", "has"), and the words that mark a name read backwards
#: ("plays_in_club_inverse" points at players, not clubs).
_NO_KIND_WORDS = frozenset(
    "by in at on of to for from with about into as has have had are was were inverse reverse".split()
)


def tail_kind(relation_type: str) -> str | None:
    """The kind of thing every tail of ``relation_type`` is, as a lower-case word, where a plain
    name (no :func:`head_kind`) says it: the noun before an inner "of", else the last word unless
    it is a preposition, a participle (ending in "ed") or a mark of a name read backwards; None
    otherwise.

    Why: a graph without a schema still names its relations for what they reach, and a
    question's noun ("which professional football team") fits that word ("club": 0.42 against
    "position" 0.26) where the relation names as wholes barely differ and the answers' own names
    say nothing (MiniLM puts "team" nearer "Midfielder" than any club's name).

    >>> [tail_kind(t) for t in ["PLAYS_IN_CLUB", "release_year", "place_of_birth", "spouse"]]
    ['club', 'year', 'place', 'spouse']
    >>> [tail_kind(t) for t in ["directed_by", "is_aged", "capital_of", "plays_in_club_inverse"]]
    [None, None, None, None]
    >>> tail_kind("location.country.capital") is None  # a head kind's name
    True
    """
    if head_kind(relation_type) is not None:
        return None
    words = relation_text(relation_type).lower().split()
    end = words.index("of", 1) if "of" in words[1:-1] else len(words)
    noun = words[end - 1] if words else ""
    if len(noun) < 3 or noun in _NO_KIND_WORDS or noun.endswith("ed"):
        return None
    return noun


@dataclass(frozen=True, slots=True)
class SchemaKinds:
    """The kinds a store's relation names give their heads (:func:`head_kind`) and tails
    (:func:`tail_kind`), embedded once.

    Attributes:
        of_relation: relation type -> its heads' kind, for the types whose name says one.
        of_tail: relation type -> its tails' kind, for the types whose name says one.
        kinds: the distinct kinds of both, sorted.
        vectors: FloatTensor [K, d], their embeddings, unit length.
    """

    of_relation: dict[str, str]
    of_tail: dict[str, str]
    kinds: list[str]
    vectors: torch.Tensor

    @classmethod
    def of(
        cls, relation_types: Iterable[str], embed: Callable[[list[str]], torch.Tensor]
    ) -> SchemaKinds | None:
        """The kinds of ``relation_types``, embedded by ``embed`` in one call (the same list each
        time, so the same vectors); None where no name says a kind (``directed_by``, ``born_in``)."""
        relation_types = list(relation_types)
        of_relation = {t: k for t in relation_types if (k := head_kind(t)) is not None}
        of_tail = {t: k for t in relation_types if (k := tail_kind(t)) is not None}
        if not of_relation and not of_tail:
            return None
        kinds = sorted({*of_relation.values(), *of_tail.values()})
        return cls(of_relation, of_tail, kinds, torch.nn.functional.normalize(embed(kinds).float(), dim=-1))

    def cosines(self, noun: torch.Tensor) -> dict[str, float]:
        """Each kind's cosine with ``noun`` ([d])."""
        fit = self.vectors @ torch.nn.functional.normalize(noun.float(), dim=-1)
        return dict(zip(self.kinds, fit.tolist(), strict=True))


def heads_of_types(
    store: GraphStore, entity_ids: Sequence[str], relation_types: Collection[str]
) -> list[tuple[str, str]]:
    """``(entity id, relation type)`` for each of ``relation_types`` that each of ``entity_ids``
    heads in ``store``, entities with more than :data:`KIND_LOOKUP_MAX_DEGREE` relationships
    left out (``entities_head_types``); no query where either is empty."""
    if not entity_ids or not relation_types:
        return []
    rows = store.run(
        queries.get("entities_head_types"),
        {"ids": list(entity_ids), "types": sorted(relation_types), "max_degree": KIND_LOOKUP_MAX_DEGREE},
    )
    return [(r["id"], r["r_type"]) for r in rows]
