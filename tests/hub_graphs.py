"""A small hub graph for the subgraph-kernel tests, the same records for kglite and a live Neo4j.

``{p}H`` is the hub topic: 40 ``links`` to ``{p}n00``..``{p}n39``, 10 ``cites`` back from
``{p}n30``..``{p}n39`` (two relationships to one far end, both directions) and 10 ``about`` to
``{p}t0``..``{p}t9``. Every ``{p}nXX`` has one ``next`` to ``{p}mXX``; ``{p}n00`` also reaches
the second hub ``{p}G`` (31 relationships), which the degree cap keeps from being expanded.
"""

from __future__ import annotations

import random

from kgqa.names import relationship_type
from kgqa.types import TripleRecord


def hub_triples(prefix: str = "") -> list[tuple[str, str, str]]:
    p = prefix
    triples = [(f"{p}H", "links", f"{p}n{i:02d}") for i in range(40)]
    triples += [(f"{p}n{i:02d}", "cites", f"{p}H") for i in range(30, 40)]
    triples += [(f"{p}H", "about", f"{p}t{i}") for i in range(10)]
    triples += [(f"{p}n{i:02d}", "next", f"{p}m{i:02d}") for i in range(40)]
    triples += [(f"{p}n00", "in", f"{p}G")]
    triples += [(f"{p}G", "has", f"{p}g{i:02d}") for i in range(30)]
    return triples


def hub_records(prefix: str = "", *, seed: int | None = None) -> list[TripleRecord]:
    """The hub triples as loader records, in a shuffled order when ``seed`` is given (another
    storage order, which must not change any subgraph)."""
    triples = hub_triples(prefix)
    if seed is not None:
        random.Random(seed).shuffle(triples)
    return [TripleRecord(h, r, t, line=i + 1) for i, (h, r, t) in enumerate(triples)]


def first_by_kernel_order(
    triples: list[tuple[str, str, str]], entity: str, n: int
) -> list[tuple[str, str, str]]:
    """The first ``n`` triples of ``entity``, as stored, in subgraph_hop's per-node order: far
    end's id, type, head id."""
    incident = [(h, relationship_type(r), t) for h, r, t in triples if entity in (h, t)]
    return sorted(incident, key=lambda t: (t[2] if t[0] == entity else t[0], t[1], t[0]))[:n]
