"""Weak supervision (SubgraphRAG 3.1): triples on shortest topic -> answer paths are positives.

Paths are taken inside the candidate subgraph, ignoring direction (a KB triple may point either
way along the question's reasoning path). A triple (u, v) lies on a shortest path between a
topic t and an answer a exactly when d(t, u) + 1 + d(v, a) = d(t, a) for one of its two
orientations, which scipy's BFS distances decide for all triples at once.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from kgqa.retrieval.subgraph import Subgraph


def _distances(sub: Subgraph, sources: list[int]) -> np.ndarray:
    n = sub.num_entities
    head, tail = sub.head.numpy(), sub.tail.numpy()
    adjacency = csr_matrix((np.ones(len(head)), (head, tail)), shape=(n, n))
    return shortest_path(adjacency, directed=False, unweighted=True, indices=sources)


def shortest_path_labels(sub: Subgraph, answer_ids: Collection[str]) -> torch.Tensor:
    """Weak labels: FloatTensor [E], 1.0 for triples on a shortest path from a topic to an answer.

    Answers outside the subgraph and topics that are also answers contribute nothing.
    """
    labels = torch.zeros(sub.num_triples)
    local = {e: i for i, e in enumerate(sub.entity_ids)}
    topics = list(range(sub.num_topics))
    answers = sorted({local[a] for a in answer_ids if a in local} - set(topics))
    if not answers or not topics or sub.num_triples == 0:
        return labels
    dist = _distances(sub, topics + answers)
    from_topic, from_answer = dist[: len(topics)], dist[len(topics) :]
    head, tail = sub.head.numpy(), sub.tail.numpy()
    on_path = np.zeros(sub.num_triples, dtype=bool)
    for ti in range(len(topics)):
        for ai, answer in enumerate(answers):
            total = from_topic[ti, answer]
            if not np.isfinite(total):
                continue
            forward = from_topic[ti, head] + 1 + from_answer[ai, tail] == total
            backward = from_topic[ti, tail] + 1 + from_answer[ai, head] == total
            on_path |= forward | backward
    labels[torch.from_numpy(on_path)] = 1.0
    return labels
