"""Nameless nodes (Freebase CVTs) named by their best-scored named neighbours."""

from __future__ import annotations

import torch

from kgqa.retrieval.evidence.nameless import NAMING_NEIGHBOURS, nameless_names
from kgqa.retrieval.graph.subgraph import Subgraph


def _sub(triples: list[tuple[int, int]], entities: list[str]) -> Subgraph:
    head, tail = zip(*triples, strict=True)
    return Subgraph(
        entity_ids=entities,
        relation_types=["R"],
        head=torch.tensor(head),
        rel=torch.zeros(len(triples), dtype=torch.long),
        tail=torch.tensor(tail),
        rel_eids=[str(i) for i in range(len(triples))],
        num_topics=1,
    )


def test_a_nameless_node_is_named_by_its_best_scored_named_neighbours() -> None:
    entities = ["Obama", "m.cvt", "Harvard", "1991", "J.D.", "m.other", "m.alone"]
    # Obama -> cvt, cvt -> Harvard, cvt -> 1991, cvt -> J.D., cvt -> m.other (nameless), m.alone -> m.other
    sub = _sub([(0, 1), (1, 2), (1, 3), (1, 4), (1, 5), (6, 5)], entities)
    named = torch.tensor([True, False, True, True, True, False, False])
    names = {e: e.upper() for e in entities}
    scores = torch.tensor([0.5, 0.9, 0.1, 0.7, 0.99, 0.2])
    out = nameless_names(sub, named, names, scores)
    assert NAMING_NEIGHBOURS == 3
    assert out == {"m.cvt": "m.cvt [HARVARD; J.D.; OBAMA]"}  # best triples first, nameless skipped
    assert "m.other" not in out and "m.alone" not in out  # no named neighbour: left as is
