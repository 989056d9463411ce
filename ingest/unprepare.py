"""``kgqa unprepare``: remove everything ``kgqa prepare`` / ``kgqa embed`` / ``ask --save`` wrote
into a user's graph, in batches, resumably.

What goes, read through the mapping recorded in the store (so a changed configuration cannot make
it miss what the old one wrote):

- on entity nodes: ``kgqa_name_norm``, the embedding property where kgqa's model property is next
  to it (``kgqa_embedding`` unless named), ``kgqa_embedding_model``, the hub slices
  (``kgqa_slice_*``) and degrees (``kgqa_degree``, ``kgqa_out_degree``);
- kgqa's nodes: ``:KgqaRelationType``, ``:KgqaQuestion`` with their ``KGQA_TOPIC`` /
  ``KGQA_ANSWER`` relationships, and last the ``:KgqaMeta`` node;
- kgqa's indexes and constraints, by kgqa's own names (``kgqa_*``); an index of the user's that
  kgqa reused is never dropped.

Each page is its own transaction and drops out of the next page's match, so an interrupted run
resumes where it stopped. A graph kgqa ingested itself (kgqa's own model) is not unprepared: its
kgqa properties are the data.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from kgqa.errors import ConfigError
from kgqa.store import queries
from kgqa.store.mapping import GraphMapping
from kgqa.store.protocol import GraphStore, Statement
from kgqa.store.schema import stored_mapping
from kgqa.types import WriteSummary

#: kgqa's index and constraint drops, each by kgqa's name under the mapping.
DROP_KERNELS = (
    "index_drop_vector_entity",
    "index_drop_vector_relation_type",
    "index_drop_fulltext_entity",
    "index_drop_fulltext_entity_text",
    "index_drop_entity_id",
    "index_drop_entity_name_norm",
    "schema_drop_constraint_relation_type_name",
    "schema_drop_constraint_kgqa_question_id",
)


@dataclass(slots=True)
class UnprepareReport:
    """What ``unprepare_store`` removed (also ``kgqa unprepare --json``)."""

    entity_label: str
    properties_removed: int = 0
    nodes_deleted: int = 0
    relationships_deleted: int = 0
    schema_dropped: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        return data


@contextlib.contextmanager
def mapped_as(store: GraphStore, mapping: GraphMapping) -> Iterator[GraphStore]:
    """``store`` rendering its kernels through ``mapping`` for the duration of the block."""
    configured = store.mapping
    store.mapping = mapping
    try:
        yield store
    finally:
        store.mapping = configured


def _changed(summary: WriteSummary) -> int:
    return summary.properties_set + summary.properties_removed + summary.nodes_deleted


def _pages(
    store: GraphStore, kernel: str, page_size: int, on_page: Callable[[int], None] | None
) -> list[WriteSummary]:
    """Run the batch ``kernel`` until a page changes nothing."""
    done: list[WriteSummary] = []
    while True:
        [summary] = store.write([Statement(queries.get(kernel), {"limit": page_size})])
        if not _changed(summary):
            return done
        done.append(summary)
        if on_page:
            on_page(1)


def unprepare_store(
    store: GraphStore, *, page_size: int = 10_000, on_page: Callable[[int], None] | None = None
) -> UnprepareReport:
    """Remove what kgqa wrote into the mapped graph in ``store`` (see the module docstring).

    Args:
        page_size: entities or nodes per transaction.
        on_page: called after each committed page (progress bars).

    Raises:
        ConfigError: the graph was never prepared and the configured mapping is kgqa's own
            model (nothing kgqa wrote can be told apart from the data).
    """
    started = time.perf_counter()
    mapping = stored_mapping(store) or store.mapping
    if mapping.is_default:
        raise ConfigError(
            "this graph uses kgqa's own model (:Entity nodes kgqa ingested): its kgqa properties are "
            "the data, so there is nothing to unprepare",
            hint="to remove a graph kgqa ingested, delete its data dir (embedded) or database; for a "
            "graph of yours, set the mapping it was prepared with (store.entity_label, ...)",
        )
    report = UnprepareReport(entity_label=mapping.entity_label)
    with mapped_as(store, mapping):
        cleaned = _pages(store, "unprepare_entities", page_size, on_page)
        report.properties_removed = sum(p.properties_set + p.properties_removed for p in cleaned)
        pages = _pages(store, "unprepare_nodes", page_size, on_page)
        report.nodes_deleted = sum(p.nodes_deleted for p in pages)
        report.relationships_deleted = sum(p.relationships_deleted for p in pages)
        for kernel in DROP_KERNELS:
            [summary] = store.write([Statement(queries.get(kernel), {})])  # DDL: one per write
            report.schema_dropped += summary.indexes_removed + summary.constraints_removed
        [meta] = store.write([Statement(queries.get("meta_delete"), {})])
        report.nodes_deleted += meta.nodes_deleted
    report.seconds = time.perf_counter() - started
    return report
