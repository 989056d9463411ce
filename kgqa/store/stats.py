"""What ``kgqa stats`` reports: counts by label and type, indexes, embedding model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.store.schema import count_entities
from kgqa.types import StoreInfo


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts plus the store's own description.

    ``embedded_entities``: entities with an embedding from the recorded model (None when the
    store has none), so an ONLINE vector index is not mistaken for a fully embedded store.
    ``entity_label``: the label counted as entities (``Entity``, or the mapped one).
    ``unkeyed_entities``: entities kgqa skips (no id, or one that is not a string; None when the
    store has no embedding model).
    """

    info: StoreInfo
    labels: dict[str, int]
    relationship_types: dict[str, int]
    embedded_entities: int | None = None
    entity_label: str = "Entity"
    unkeyed_entities: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.info.to_dict(),
            "labels": self.labels,
            "relationship_types": self.relationship_types,
            "embedded_entities": self.embedded_entities,
            "unkeyed_entities": self.unkeyed_entities,
        }

    def render(self) -> str:
        info = self.info
        lines = [f"store: {info.backend} at {info.location}"]
        if info.embedding:
            e = info.embedding
            lines.append(
                f"embedding model: {e.model_id} ({e.dimension} dims, {e.similarity}); "
                f"{self.embedded_entities or 0:,} of {self.labels.get(self.entity_label, 0):,} "
                "entities embedded"
                + (
                    f" ({self.unkeyed_entities:,} without a string id, skipped)"
                    if self.unkeyed_entities
                    else ""
                )
            )
        else:
            lines.append("embedding model: none (run 'kgqa embed')")
        lines.append("nodes by label:")
        lines += [f"  {label:<24} {count:>10,}" for label, count in self.labels.items()]
        lines.append("relationships by type:")
        lines += [f"  {rtype:<24} {count:>10,}" for rtype, count in self.relationship_types.items()]
        lines.append("indexes:")
        for idx in info.indexes:
            target = f"{','.join(idx.labels)}({','.join(idx.properties)})"
            vector = f" {idx.dimensions} dims {idx.similarity}" if idx.dimensions else ""
            lines.append(f"  {idx.name:<24} {idx.kind:<9} {idx.state:<8} {target}{vector}")
        return "\n".join(lines)


def collect_stats(store: GraphStore) -> StoreStats:
    """Run the stats kernels and the store's info pre-flight.

    Relationships are counted one type at a time, which Neo4j answers from its count store; a
    grouped count would read every relationship of a large database. Labels are counted in one
    pass over the nodes (kglite's ``db.labels()`` lists a node's first label only).
    """
    labels = {r["label"]: int(r["count"]) for r in store.run(queries.get("stats_labels"))}
    counted = {
        r["type"]: _count(store, "stats_relationship_type_count", {"rel_type": r["type"]})
        for r in store.run(queries.get("stats_relationship_types"))
    }
    # a type whose last relationship was deleted stays in kglite's catalogue: not shown
    types = {rel_type: count for rel_type, count in counted.items() if count}
    info = store.info()
    entity_label = store.mapping.entity_label
    embedded = unkeyed = None
    if info.embedding is not None:
        counts = count_entities(store, info.embedding.model_id)
        unkeyed = counts.unkeyed
        embedded = labels.get(entity_label, 0) - counts.pending - counts.unkeyed
    return StoreStats(info, labels, types, embedded, entity_label, unkeyed)


def _count(store: GraphStore, kernel: str, params: dict[str, Any]) -> int:
    rows = store.run(queries.get(kernel), params)
    return int(rows[0]["count"]) if rows else 0
