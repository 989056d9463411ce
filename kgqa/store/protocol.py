"""The one seam between kgqa and a graph database.

Both adapters execute the same Neo4j-dialect kernels from ``cypher/`` (see ``queries.py``) and
normalise what differs between backends inside themselves: rows are plain dicts, element ids
are ``str``, and vector similarity scores use Neo4j's scale ``(1 + cos) / 2`` in [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kgqa.store.mapping import GraphMapping
from kgqa.store.queries import Query
from kgqa.types import StoreInfo, WriteSummary


@dataclass(frozen=True, slots=True)
class Statement:
    """One kernel call inside a write transaction."""

    query: Query
    params: Mapping[str, Any]


@runtime_checkable
class GraphStore(Protocol):
    """A graph database that runs kgqa's Cypher kernels.

    Implementations: ``KgliteStore`` (embedded, default) and ``Neo4jStore`` (Bolt).

    Attributes:
        backend: ``embedded`` or ``neo4j``.
        mapping: the labels and properties every kernel is rendered with (kgqa.store.mapping).
    """

    backend: str
    mapping: GraphMapping

    def run(self, query: Query, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one read kernel and return its rows, fully materialised.

        Raises:
            QueryError: wrong parameters (named with the file) or a failed query.
            StoreUnavailableError: the backend cannot be reached.
        """
        ...

    def write(self, statements: Sequence[Statement]) -> list[WriteSummary]:
        """Run write kernels in ONE transaction: all of them take effect or none does.

        Returns:
            what each statement changed, in statement order.
        """
        ...

    def info(self) -> StoreInfo:
        """Backend name, location, indexes and the embedding model recorded in the store."""
        ...

    def close(self) -> None:
        """Persist (embedded) or release connections (Neo4j). Idempotent."""
        ...

    def __enter__(self) -> GraphStore: ...

    def __exit__(self, *exc: object) -> None: ...
