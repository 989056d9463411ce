"""Weak supervision: which candidate triples a question's reasoning goes through, and which
entities answer it.

Used by training (the labels the models learn) and by evaluation (the recalls it reports), so it
lives in :mod:`kgqa.retrieval`; ``retriever_training`` imports it, never the other way.

SubgraphRAG (3.1) labels the triples on shortest topic -> answer paths. Paths are taken inside
the candidate subgraph, ignoring direction (a KB triple may point either way along the
question's reasoning path). A triple (u, v) lies on a shortest path between a topic t and an
answer a exactly when d(t, u) + 1 + d(v, a) = d(t, a) for one of its two orientations, which
scipy's BFS distances decide for all triples at once.

Shortest paths are noisy supervision (ReG makes the same point): many join topic and answer
through relations the question never asks about (tags, years, co-stars), and a 3-hop answer that
the topic also reaches in one step is labelled with that one step only (docs/decisions.md).
Where the data names the gold relation path (PathQuestion and WC2014 paths, MetaQA qtypes),
:func:`weak_labels` labels the triples on walks that follow it instead.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from kgqa.names import relationship_type
from kgqa.retrieval.features import PreparedQuestion
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.types import QAExample


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
    local = sub.local_ids()
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


def relation_path_labels(
    sub: Subgraph, answer_ids: Collection[str], relation_paths: Collection[Sequence[str]]
) -> torch.Tensor:
    """FloatTensor [E], 1.0 for triples on a walk topic -> answer that follows a relation path.

    Step i of a walk crosses one triple of relation ``path[i]`` in either direction (MetaQA's
    ``director_to_movie`` walks DIRECTED_BY backwards). Walks need not be shortest; they come
    back through (and answers may be) a topic only under ``sub.topic_walks``: MetaQA's answers
    are the ends of walks that never come back, PathQuestion's often lie on walks that do
    (docs/decisions.md).
    A triple of relation ``path[i]`` is on a walk when one end is reached from a topic in i
    steps and the other reaches an answer in the remaining ``L - i - 1`` steps.

    Args:
        relation_paths: relation names as in the triple file (``directed_by``); they are mapped
            to relationship types with :func:`kgqa.names.relationship_type`.
    """
    labels = torch.zeros(sub.num_triples)
    local = sub.local_ids()
    answers = torch.zeros(sub.num_entities, dtype=torch.bool)
    answers[[local[a] for a in answer_ids if a in local]] = True
    may_end = sub.candidate_mask()
    answers &= may_end
    if not answers.any() or sub.num_topics == 0:
        return labels
    relation_of = {name: i for i, name in enumerate(sub.relation_types)}
    topics = torch.arange(sub.num_entities) < sub.num_topics
    for path in relation_paths:
        rels = [relation_of.get(relationship_type(name), -1) for name in path]
        if not rels or min(rels) < 0:
            continue
        steps = [sub.rel == r for r in rels]
        frontier = [topics]  # frontier[i]: reached from a topic in i steps
        for step in steps[:-1]:
            frontier.append(_neighbours(frontier[-1], sub, step) & may_end)
        back = [answers]  # back[i]: where step i may end (then steps i+1.. reach an answer)
        for step in reversed(steps[1:]):
            back.insert(0, _neighbours(back[0], sub, step) & may_end)
        for step, near, far in zip(steps, frontier, back, strict=True):
            on_walk = (near[sub.head] & far[sub.tail]) | (near[sub.tail] & far[sub.head])
            labels[step & on_walk] = 1.0
    return labels


def _neighbours(entities: torch.Tensor, sub: Subgraph, step: torch.Tensor) -> torch.Tensor:
    """BoolTensor [N]: entities one ``step`` triple (either direction) away from ``entities``."""
    out = torch.zeros_like(entities)
    out[sub.tail[step & entities[sub.head]]] = True
    out[sub.head[step & entities[sub.tail]]] = True
    return out


def weak_labels(sub: Subgraph, example: QAExample) -> torch.Tensor:
    """Relation-path labels where the example names its gold paths and they reach an answer in
    ``sub``, else shortest-path labels (also for inconsistent lines whose path the KB lacks)."""
    if example.relation_paths:
        labels = relation_path_labels(sub, example.answers, example.relation_paths)
        if labels.any():
            return labels
    return shortest_path_labels(sub, example.answers)


def answer_mask(prepared: PreparedQuestion, answer_ids: Collection[str]) -> torch.Tensor:
    """BoolTensor [N]: which local entities are gold answers (topics excluded unless the
    subgraph's walk rule lets them answer)."""
    sub = prepared.subgraph
    gold = set(answer_ids)
    return torch.tensor([e in gold for e in sub.entity_ids], dtype=torch.bool) & sub.candidate_mask()
