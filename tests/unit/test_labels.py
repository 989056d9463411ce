"""Weak labels: triples on shortest topic -> answer paths, checked by hand and against networkx."""

from __future__ import annotations

import random

import networkx as nx
import torch

from kgqa.retrieval.subgraph import Subgraph
from retriever_training.labels import shortest_path_labels


def _subgraph(n: int, edges: list[tuple[int, int]], num_topics: int = 1) -> Subgraph:
    return Subgraph(
        entity_ids=[f"e{i}" for i in range(n)],
        relation_types=["R"],
        head=torch.tensor([h for h, _ in edges], dtype=torch.long),
        rel=torch.zeros(len(edges), dtype=torch.long),
        tail=torch.tensor([t for _, t in edges], dtype=torch.long),
        rel_eids=[str(i) for i in range(len(edges))],
        num_topics=num_topics,
    )


def test_shortest_path_labels_mark_both_directions_and_all_shortest_paths() -> None:
    # 0 -> 1 -> 3, 0 <- 2 -> 3 (two shortest 2-hop paths, one edge reversed), 0 -> 4 -> 5 -> 3 (longer)
    edges = [(0, 1), (1, 3), (2, 0), (2, 3), (0, 4), (4, 5), (5, 3), (1, 6)]
    labels = shortest_path_labels(_subgraph(7, edges), ["e3"])
    assert labels.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


def test_shortest_path_labels_empty_when_answer_missing_or_is_topic() -> None:
    sub = _subgraph(3, [(0, 1), (1, 2)])
    assert shortest_path_labels(sub, ["nope"]).sum() == 0
    assert shortest_path_labels(sub, ["e0"]).sum() == 0


def _reference(sub: Subgraph, answers: list[str]) -> torch.Tensor:
    g = nx.MultiGraph()
    g.add_nodes_from(range(sub.num_entities))
    for i, (h, t) in enumerate(zip(sub.head.tolist(), sub.tail.tolist(), strict=True)):
        g.add_edge(h, t, key=i)
    on_path: set[frozenset[int]] = set()
    for t in range(sub.num_topics):
        for a in (sub.entity_ids.index(x) for x in answers):
            if a < sub.num_topics or not nx.has_path(g, t, a):
                continue
            for path in nx.all_shortest_paths(g, t, a):
                on_path.update(frozenset(p) for p in zip(path, path[1:], strict=False))
    return torch.tensor(
        [
            float(frozenset((h, t)) in on_path)
            for h, t in zip(sub.head.tolist(), sub.tail.tolist(), strict=True)
        ]
    )


def test_shortest_path_labels_match_networkx_on_random_graphs() -> None:
    rng = random.Random(7)
    for _ in range(30):
        n = rng.randint(4, 14)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(3, 30))]
        edges = [(h, t) for h, t in edges if h != t] or [(0, 1)]
        sub = _subgraph(n, edges, num_topics=rng.randint(1, 2))
        answers = [f"e{i}" for i in rng.sample(range(n), rng.randint(1, 3))]
        assert torch.equal(shortest_path_labels(sub, answers), _reference(sub, answers))
