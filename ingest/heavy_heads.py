"""Heavy heads: the existing (type, tail) pairs of entities with many outgoing relationships.

``ingest_triples`` creates a relationship only when no (head, type, tail) exists yet, and its
probe walks the smaller end's adjacency (kglite walks a node's relationships of every type). A
row from a head with tens of thousands of relationships into a popular tail then costs tens of
thousands of steps, and on ``bench.scale``'s 5M-triple graph such rows were nearly all of the
load. The loader instead reads a heavy head's outgoing pairs once per load, keeps them here,
decides existence in Python and sends that head's new rows to ``ingest_triples_absent``.

The pairs stay right because kgqa loads with one writer: every relationship created from a
known heavy head goes through :meth:`HeavyHeads.add` once its transaction commits.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgqa.store import queries
from kgqa.store.protocol import GraphStore

#: Outgoing relationships from which a head's pairs are read and kept: below it the probe walks
#: at most this many relationships per row, and the pairs kept stay a small share of a load.
HEAVY_OUT_DEGREE = 5_000


class HeavyHeads:
    """Existing (type, tail) pairs per heavy head, read from the store on first sight."""

    def __init__(self, store: GraphStore, min_out_degree: int = HEAVY_OUT_DEGREE) -> None:
        self.store = store
        self.min_out_degree = min_out_degree
        self.pairs: dict[str, set[tuple[str, str]]] = {}

    def update(self, heads: Iterable[str]) -> None:
        """Start keeping the pairs of those of ``heads`` that have become heavy (one lookup each)."""
        unknown = sorted({h for h in heads if h not in self.pairs})
        if not unknown:
            return
        rows = self.store.run(
            queries.get("ingest_heavy_heads"), {"ids": unknown, "min_out_degree": self.min_out_degree}
        )
        heavy = [r["id"] for r in rows]
        if not heavy:
            return
        for h in heavy:
            self.pairs[h] = set()
        for r in self.store.run(queries.get("ingest_out_pairs"), {"ids": heavy}):
            self.pairs[r["h"]].add((r["r_type"], r["t"]))

    def exists(self, head: str, rel_type: str, tail: str) -> bool | None:
        """Whether (head, type, tail) exists; None when ``head`` is not a known heavy head."""
        known = self.pairs.get(head)
        return None if known is None else (rel_type, tail) in known

    def add(self, created: Iterable[tuple[str, str, str]]) -> None:
        """Record committed (head, type, tail) triples of known heavy heads."""
        for head, rel_type, tail in created:
            self.pairs[head].add((rel_type, tail))
