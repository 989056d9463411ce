"""The kinds of things a graph's schema says its entities are, read from relation names.

Freebase names a property ``domain.type.property`` and gives it subjects of that type only
(``location.country.languages_spoken``: its heads are countries), so the relations an entity
heads say what it is: Nepal heads ``location.country.*`` facts, Kapilavastu only
``location.location.*`` ones. A graph whose relation names have no such parts (MetaQA's
``directed_by``) says nothing here, and nothing reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import torch

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


@dataclass(frozen=True, slots=True)
class SchemaKinds:
    """The kinds a store's relation names give their heads (:func:`head_kind`), embedded once.

    Attributes:
        of_relation: relation type -> its heads' kind, for the types whose name says one.
        kinds: the distinct kinds, sorted.
        vectors: FloatTensor [K, d], their embeddings, unit length.
    """

    of_relation: dict[str, str]
    kinds: list[str]
    vectors: torch.Tensor

    @classmethod
    def of(
        cls, relation_types: Iterable[str], embed: Callable[[list[str]], torch.Tensor]
    ) -> SchemaKinds | None:
        """The kinds of ``relation_types``, embedded by ``embed`` in one call (the same list each
        time, so the same vectors); None where no name says a kind (MetaQA's ``directed_by``)."""
        of_relation = {t: k for t in relation_types if (k := head_kind(t)) is not None}
        if not of_relation:
            return None
        kinds = sorted(set(of_relation.values()))
        return cls(of_relation, kinds, torch.nn.functional.normalize(embed(kinds).float(), dim=-1))

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
