"""What ``kgqa stats`` reports: counts by label and type, indexes, embedding model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import StoreInfo


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts plus the store's own description."""

    info: StoreInfo
    labels: dict[str, int]
    relationship_types: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.info.to_dict(),
            "labels": self.labels,
            "relationship_types": self.relationship_types,
        }

    def render(self) -> str:
        info = self.info
        lines = [f"store: {info.backend} at {info.location}"]
        if info.embedding:
            e = info.embedding
            lines.append(f"embedding model: {e.model_id} ({e.dimension} dims, {e.similarity})")
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
    """Run the stats kernels and the store's info pre-flight."""
    labels = {r["label"]: int(r["count"]) for r in store.run(queries.get("stats_labels"))}
    types = {r["type"]: int(r["count"]) for r in store.run(queries.get("stats_relationship_types"))}
    return StoreStats(store.info(), labels, types)
