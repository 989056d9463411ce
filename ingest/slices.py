"""Hub slices: each hub's first triples in the subgraph kernel's order, chosen once at load time.

``cypher/subgraph_hop.cypher`` keeps, per expanded entity, its first ``retrieval.max_per_node``
triples by (far end's id, type, head id). Finding them needs every relationship of the entity
sorted, so a topic with 350k relationships cost its degree at every question. A slice is the list
of far ids those first triples go to, written on the entity (``kgqa_slice_*``, with the cap
``kgqa_slice_cap``, the degree ``kgqa_slice_degree`` and the number of relationships to those far
ids ``kgqa_slice_rows`` it was built at); subgraph_hop expands a sliced entity through it, from
the far side, and gets the same rows.

Which entities: those with more relationships than the cap whose slice is missing, built for
another cap, built at another degree (a later load added relationships; an idempotent re-run
adds none and rebuilds nothing), or whose far ids no longer hold the relationships counted (a
fact deleted or added by hand on a live graph, even when the degree stayed). The loader
refreshes them at the end of every load and ``kgqa prepare`` on a graph kgqa did not ingest; a
stale slice is never used: subgraph_hop checks degree and count at every question and takes the
full order instead, only slower.
"""

from __future__ import annotations

from collections.abc import Callable

from kgqa.store import queries
from kgqa.store.protocol import GraphStore, Statement

#: Slices built per transaction: a page reads every relationship of its hubs once.
SLICE_PAGE = 50


def refresh_slices(
    store: GraphStore,
    max_per_node: int,
    *,
    page_size: int = SLICE_PAGE,
    on_page: Callable[[int], None] | None = None,
) -> int:
    """Build the missing or stale slices for cap ``max_per_node``; return how many were built.

    Args:
        store: the graph store (read through its mapping).
        max_per_node: the per-node cap the slices serve (``retrieval.max_per_node``); a question
            with a larger cap expands hubs the slow way.
        page_size: slices written per transaction (an interrupted refresh keeps the pages done).
        on_page: called with the number of slices in each committed page (progress bars).
    """
    pending = [
        r["id"] for r in store.run(queries.get("ingest_slices_pending"), {"max_per_node": max_per_node})
    ]
    build = queries.get("ingest_slices_build")
    for start in range(0, len(pending), page_size):
        ids = pending[start : start + page_size]
        store.write([Statement(build, {"ids": ids, "max_per_node": max_per_node})])
        if on_page:
            on_page(len(ids))
    return len(pending)
