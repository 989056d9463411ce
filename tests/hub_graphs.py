"""A small hub graph for the subgraph-kernel tests, the same records for kglite and a live Neo4j.

``{p}H`` is the hub topic: 40 ``links`` to ``{p}n00``..``{p}n39``, 10 ``cites`` back from
``{p}n30``..``{p}n39`` (two relationships to one far end, both directions) and 10 ``about`` to
``{p}t0``..``{p}t9``. Every ``{p}nXX`` has one ``next`` to ``{p}mXX``; ``{p}n00`` also reaches
the second hub ``{p}G`` (31 relationships), which the degree cap keeps from being expanded.

``mixed_hub_triples`` is the graph of the hub-slice tests (ingest.slices): it mixes what makes
slices hard: hubs that are mostly tails and hubs that are mostly heads, links between hubs in
both directions (so some far ends are heavier than the hub on their side and are walked from the
hub's side), several types between one pair, self-loops.
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


def mixed_hub_triples(seed: int, prefix: str = "") -> list[tuple[str, str, str]]:
    """Tail hubs ``{p}T0``..``{p}T2`` (many heads point at them), head hubs ``{p}S0``, ``{p}S1``
    (they point at many tails), links between the hubs both ways, repeated pairs under other
    types, self-loops; sorted."""
    rng = random.Random(seed)
    p = prefix
    triples: set[tuple[str, str, str]] = set()
    for hub, fans in (("T0", 40), ("T1", 25), ("T2", 16)):
        triples |= {(f"{p}x{rng.randrange(60)}", rng.choice("pqr"), p + hub) for _ in range(fans)}
    for hub, fans in (("S0", 35), ("S1", 20)):
        triples |= {(p + hub, rng.choice("pqr"), f"{p}y{rng.randrange(60)}") for _ in range(fans)}
    hubs = [p + h for h in ("T0", "T1", "T2", "S0", "S1")]
    triples |= {(a, rng.choice("pq"), b) for a in hubs for b in hubs if a != b and rng.random() < 0.6}
    triples |= {(f"{p}T0", "loop", f"{p}T0"), (f"{p}S0", "loop", f"{p}S0"), (f"{p}x1", "loop", f"{p}x1")}
    triples |= {(f"{p}x{i}", "r", f"{p}y{i}") for i in range(60)}
    return sorted(triples)


def as_records(triples: list[tuple[str, str, str]], seed: int = 0) -> list[TripleRecord]:
    """``triples`` as loader records, one per line, in a seeded shuffled order."""
    shuffled = list(triples)
    random.Random(seed).shuffle(shuffled)
    return [TripleRecord(h, r, t, line=i + 1) for i, (h, r, t) in enumerate(shuffled)]


def first_by_kernel_order(
    triples: list[tuple[str, str, str]], entity: str, n: int
) -> list[tuple[str, str, str]]:
    """The first ``n`` triples of ``entity``, as stored, in subgraph_hop's per-node order: far
    end's id, type, head id."""
    incident = [(h, relationship_type(r), t) for h, r, t in triples if entity in (h, t)]
    return sorted(incident, key=lambda t: (t[2] if t[0] == entity else t[0], t[1], t[0]))[:n]
