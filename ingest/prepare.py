"""``kgqa prepare``: make a graph kgqa did not ingest ready for ``kgqa ask``, in place.

The graph is read through the store's schema mapping (kgqa.store.mapping: entity label, id /
name / text properties, fact relationship types). Nothing is re-ingested, and the user's nodes
get only properties kgqa owns (``kgqa_name_norm`` here, ``kgqa_embedding`` and
``kgqa_embedding_model`` from ``kgqa embed``); their labels, relationships and other
properties are never written. What it creates:

- range indexes on the entity id and ``kgqa_name_norm`` (indexes only, no constraint on the
  user's data), and kgqa's own constraints, all named ``kgqa_*``;
- ``kgqa_name_norm`` on every named entity (exact-match linking), page by page, so an
  interrupted run resumes and a re-run writes nothing;
- a ``:KgqaRelationType`` node per fact type (its text is what gets embedded);
- hub slices (ingest.slices: ``kgqa_slice_*`` on entities with more fact relationships than
  ``retrieval.max_per_node``), so a hub topic's subgraph costs the cap, not its degree; re-run
  ``kgqa prepare`` after changing the graph, or such a hub is expanded the slow way;
- then, unless told not to, the embeddings and search indexes of ``kgqa embed``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ingest.slices import refresh_slices
from kgqa.config import RETRIEVAL_DEFAULTS
from kgqa.errors import ConfigError
from kgqa.names import normalise_name, relation_text
from kgqa.store import queries
from kgqa.store.protocol import GraphStore, Statement
from kgqa.store.schema import (
    check_mapping,
    count_entities,
    ensure_constraints,
    record_mapping,
    stored_mapping,
)

log = logging.getLogger(__name__)

#: kgqa's own relationship types (saved questions), never facts.
KGQA_TYPE_PREFIX = "KGQA_"


@dataclass(slots=True)
class PrepareReport:
    """Outcome of ``prepare_store`` (also the start of ``kgqa prepare --json``)."""

    entity_label: str
    names_normalised: int = 0
    entities_skipped: int = 0
    redone_from: str | None = None
    relation_types: list[str] = field(default_factory=list)
    slices_built: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "entity_label": self.entity_label,
            "names_normalised": self.names_normalised,
            "entities_skipped": self.entities_skipped,
            "relation_types": self.relation_types,
            "slices_built": self.slices_built,
            "redone_from": self.redone_from,
            "seconds": round(self.seconds, 3),
        }


def fact_types(store: GraphStore) -> list[str]:
    """The relationship types read as KG facts: the mapping's, else every type but kgqa's own."""
    if store.mapping.fact_types:
        return list(store.mapping.fact_types)
    rows = store.run(queries.get("stats_relationship_types"))
    return [r["type"] for r in rows if not str(r["type"]).startswith(KGQA_TYPE_PREFIX)]


def _normalise_names(store: GraphStore, page_size: int, on_page: Callable[[int], None] | None) -> int:
    done, after = 0, ""
    while rows := store.run(queries.get("prepare_pending_names"), {"after": after, "limit": page_size}):
        payload = [{"id": r["id"], "name_norm": normalise_name(str(r["name"]))} for r in rows]
        store.write([Statement(queries.get("prepare_set_names"), {"rows": payload})])
        done += len(rows)
        after = str(rows[-1]["id"])
        if on_page:
            on_page(len(rows))
    return done


def _check_keys(store: GraphStore, report: PrepareReport) -> None:
    """Count the entities kgqa cannot key (no id, or not a string); refuse a mapping none can be."""
    counts = count_entities(store, "")
    report.entities_skipped = counts.unkeyed
    if not counts.unkeyed:
        return
    mapping = store.mapping
    if counts.keyed == 0:
        sample = store.run(queries.get("prepare_unkeyed_sample"), {"limit": 1})
        found = (
            f"holds {type(sample[0]['id']).__name__} values (e.g. {sample[0]['id']!r})"
            if sample and sample[0]["id"] is not None
            else "is missing"
        )
        raise ConfigError(
            f"entity id property '{mapping.id_property}' of :{mapping.entity_label} {found} on all "
            f"{counts.unkeyed:,} entities; kgqa needs string ids",
            hint="name a string-valued unique property with KGQA_STORE__ENTITY_ID_PROPERTY, or add "
            f"one (e.g. SET n.uid = toString(n.{mapping.id_property}))",
        )
    log.warning(
        "skipping %d of %d :%s nodes without a string '%s' property: kgqa cannot link, embed or "
        "expand them (give them one, e.g. SET n.%s = toString(elementId(n)))",
        counts.unkeyed,
        counts.keyed + counts.unkeyed,
        mapping.entity_label,
        mapping.id_property,
        mapping.id_property,
    )


def prepare_store(
    store: GraphStore,
    *,
    redo: bool = False,
    slice_cap: int = RETRIEVAL_DEFAULTS.max_per_node,
    page_size: int = 10_000,
    on_page: Callable[[int], None] | None = None,
) -> PrepareReport:
    """Indexes, normalised names, relation-type nodes and hub slices for the mapped graph in ``store``.

    Args:
        redo: when the graph was prepared for another mapping, first remove what kgqa wrote for
            it (ingest.unprepare); without it such a graph is refused.
        slice_cap: the per-node cap hub slices are built for (``retrieval.max_per_node``).
        page_size: entities normalised per transaction.
        on_page: called with the number of names normalised in each page (progress bars).

    Raises:
        ConfigError: the graph was prepared for another mapping (without ``redo``), or no
            entity has a string id (the mapped id property is missing or holds
            other values); entities without one are skipped and counted when others have it.
    """
    started = time.perf_counter()
    report = PrepareReport(entity_label=store.mapping.entity_label)
    previous = stored_mapping(store)
    if redo and previous is not None and previous != store.mapping:
        from ingest.unprepare import unprepare_store

        unprepare_store(store)
        report.redone_from = previous.to_json()
    check_mapping(store)
    record_mapping(store)  # first: an interrupted run is still undone by 'kgqa unprepare'
    ensure_constraints(store)
    _check_keys(store, report)
    report.names_normalised = _normalise_names(store, page_size, on_page)
    report.relation_types = fact_types(store)
    rows = [{"name": t, "source_name": t, "text": relation_text(t.lower())} for t in report.relation_types]
    if rows:
        store.write([Statement(queries.get("ingest_relation_types"), {"rows": rows})])
    report.slices_built = refresh_slices(store, slice_cap)
    report.seconds = time.perf_counter() - started
    return report
