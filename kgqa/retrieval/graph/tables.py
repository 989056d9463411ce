"""In-process caches of the store's entity and relation-type embeddings.

Retrieval needs the embedding of every entity in a candidate subgraph (thousands per question).
Fetching them once and keeping them in one matrix turns that into a gather; entities are
fetched lazily (one ``entities_get`` call per question for the ids not seen yet), so a large KB
is never loaded whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import torch

from kgqa.errors import MissingIndexError
from kgqa.store import queries
from kgqa.store.protocol import GraphStore

_MACHINE_ID = re.compile(r"^[mg]\.[0-9a-z_]+$")


def has_meaningful_text(entity_id: str, name: str | None, text: str | None) -> bool:
    """False for entities whose only 'text' is a machine id (Freebase CVT nodes like ``m.0abc``).

    Such entities share one learned vector in the scorer instead of an embedding of their id.
    """
    if text:
        return True
    return bool(name) and not _MACHINE_ID.match(name or "")


class EntityTable:
    """Entity id -> row of an embedding matrix, filled on demand from the store.

    Rows are appended into storage that doubles when full, so a question that fetches k new
    entities costs O(k) however many the table holds (an evaluation run fills it with tens of
    thousands: re-concatenating the whole matrix per question had cost ~17 ms a 3-hop question).

    Attributes:
        matrix: FloatTensor [rows, d]; row 0 is an all-zero row for entities without an embedding.
        has_text: BoolTensor [rows], see ``has_meaningful_text``.
    """

    def __init__(self, store: GraphStore, dimension: int) -> None:
        self._store = store
        self._rows: dict[str, int] = {}
        self.names: dict[str, str] = {}
        self._vectors = torch.zeros(1024, dimension)
        self._text = torch.zeros(1024, dtype=torch.bool)
        self._size = 1  # row 0: no embedding
        self.dimension = dimension

    def rows(self, entity_ids: Sequence[str]) -> torch.Tensor:
        """LongTensor [n] of rows for ``entity_ids``, fetching unseen ids in one query."""
        missing = [e for e in dict.fromkeys(entity_ids) if e not in self._rows]
        if missing:
            self._fetch(missing)
        return torch.tensor([self._rows[e] for e in entity_ids], dtype=torch.long)

    def _fetch(self, ids: list[str]) -> None:
        found = {r["id"]: r for r in self._store.run(queries.get("entities_get"), {"ids": ids})}
        vectors: list[list[float]] = []
        text: list[bool] = []
        for entity_id in ids:
            row = found.get(entity_id)
            self.names[entity_id] = (row or {}).get("name") or entity_id
            if row is None or row["embedding"] is None:
                self._rows[entity_id] = 0
                continue
            self._rows[entity_id] = self._size + len(vectors)
            text.append(has_meaningful_text(entity_id, row["name"], row["text"]))
            vectors.append(row["embedding"])
        if vectors:
            # numpy reads nested float lists in about half torch.tensor's time
            self._append(torch.from_numpy(np.asarray(vectors, dtype=np.float32)), torch.tensor(text))

    def _append(self, vectors: torch.Tensor, text: torch.Tensor) -> None:
        end = self._size + len(vectors)
        if end > len(self._vectors):
            capacity = max(end, 2 * len(self._vectors))
            self._vectors = torch.cat(
                [self._vectors[: self._size], vectors.new_zeros(capacity - self._size, self.dimension)]
            )
            self._text = torch.cat([self._text[: self._size], text.new_zeros(capacity - self._size)])
        self._vectors[self._size : end] = vectors
        self._text[self._size : end] = text
        self._size = end

    @property
    def matrix(self) -> torch.Tensor:
        return self._vectors[: self._size]

    @property
    def has_text(self) -> torch.Tensor:
        return self._text[: self._size]


class RelationTable:
    """Relationship type -> embedding row, loaded once (a KB has few relation types)."""

    def __init__(self, store: GraphStore) -> None:
        rows = [r for r in store.run(queries.get("relation_types_list")) if r["embedding"] is not None]
        if not rows:
            raise MissingIndexError(
                "the store has no embedded relation types",
                hint="run 'kgqa embed' (or 'kgqa ingest' without --no-embed) first",
            )
        self.index = {r["name"]: i for i, r in enumerate(rows)}
        self.matrix = torch.tensor([r["embedding"] for r in rows], dtype=torch.float32)

    def rows(self, types: Sequence[str]) -> torch.Tensor:
        """LongTensor [n] of rows for relationship type names (unknown types raise KeyError)."""
        return torch.tensor([self.index[t] for t in types], dtype=torch.long)
