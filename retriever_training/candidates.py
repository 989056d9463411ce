"""Candidate relation paths of a training question: the relation sequences of its topic ->
answer walks, the pool that refined supervision (ReG, ``kgqa refine``) chooses from.

For each answer in the subgraph, the signed plans (:func:`~kgqa.retrieval.models.plans.enumerate_plans`)
that end there in at most ``extra_steps`` more steps than its shortest walk are its candidate
walks; the union over answers, deduplicated by unsigned relation sequence (ReG's relation-chain
merging), is the pool. With ``extra_steps=0`` these are exactly the relation sequences that
:func:`~kgqa.retrieval.labels.shortest_path_labels` labels, so keeping all of them reproduces the
noisy labels. The path a question asks for is not always a shortest one: "X's parent's child's
nationality" has a one-step shortcut (X's own nationality) wherever a family shares it, and then
only a longer walk holds the asked path (ReG widens its pool for the same reason).

Each candidate carries one representative walk to one answer (ReG's answer merging: answers on
one relation chain share its reasoning), which is what an LLM judge reads, and how well the
entities its walks reach match the answers (``fit``): the path a question asks for reaches its
answers and little else, while a coincidental one ("films X directed", when the question asks
for those X wrote) reaches some answers and other entities too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.models.plans import Plans, enumerate_plans


@dataclass(frozen=True, slots=True)
class CandidatePath:
    """One candidate relation path of a question.

    Attributes:
        relations: relationship types in walk order, topic first (``("WRITTEN_BY", "DIRECTED_BY")``).
        steps: the signed local steps of the representative walk (``2 * rel + backward``).
        walk: local entity ids of the representative walk, topic first, an answer last.
        answers: how many answers the candidate's walks reach (within ``extra_steps``).
        fit: Jaccard similarity of the entities its walks (of any direction per step) reach
            and the answers, in (0, 1].
    """

    relations: tuple[str, ...]
    steps: tuple[int, ...]
    walk: tuple[int, ...]
    answers: int
    fit: float


def candidate_paths(
    sub: Subgraph, answers: torch.Tensor, max_steps: int, extra_steps: int = 0
) -> list[CandidatePath]:
    """The question's candidate paths, ordered by length, then by answers reached (most first).

    Under the permissive walk rule (``sub.topic_walks``) a relation path that reaches an answer
    without coming back through a topic keeps its "never back" candidate (walk, answers, fit):
    walks back through the topic reach entities that a dataset whose answers never come back
    (MetaQA's: "films directed by X's director" leaves X out) does not count, which would lower
    the fit of the asked path itself. Only paths that reach an answer solely back through a
    topic are judged by those walks.

    Args:
        answers: BoolTensor [N], the answer entities (a topic counts only under the subgraph's
            walk rule ``sub.topic_walks``, which the walks follow too).
        max_steps: the longest walk considered (the question's hops).
        extra_steps: how many steps longer than an answer's shortest walk a candidate walk to it
            may be (0: shortest walks only; ``max_steps``: every walk of up to ``max_steps``).
    """
    out = _candidates_under_rule(sub, answers, max_steps, extra_steps)
    if sub.topic_walks:
        never_back = _candidates_under_rule(replace(sub, topic_walks=False), answers, max_steps, extra_steps)
        by_relations = {c.relations: c for c in never_back}
        out = [by_relations.get(c.relations, c) for c in out]
    return sorted(out, key=lambda c: (len(c.relations), -c.answers, c.relations))


def _candidates_under_rule(
    sub: Subgraph, answers: torch.Tensor, max_steps: int, extra_steps: int
) -> list[CandidatePath]:
    """:func:`candidate_paths` of walks under ``sub``'s walk rule only, unordered."""
    plans = enumerate_plans(sub, max_steps)
    if plans.num_plans == 0:
        return []
    is_answer = answers & sub.candidate_mask()
    lengths = plans.lengths()
    at_answer = is_answer[plans.end_entity]
    plan_of, entity_of = plans.end_plan[at_answer], plans.end_entity[at_answer]
    if plan_of.numel() == 0:
        return []
    shortest = torch.full((sub.num_entities,), max_steps + 1, dtype=torch.long)
    shortest.scatter_reduce_(0, entity_of, lengths[plan_of], reduce="amin")
    keep = lengths[plan_of] <= shortest[entity_of] + extra_steps
    reached: dict[tuple[str, ...], tuple[int, int, set[int]]] = {}  # relations -> (plan, first end, answers)
    for p, e in zip(plan_of[keep].tolist(), entity_of[keep].tolist(), strict=True):
        relations = tuple(sub.relation_types[s // 2] for s in _steps(plans, p))
        if relations not in reached:
            reached[relations] = (p, e, set())
        reached[relations][2].add(e)
    ends: dict[tuple[str, ...], set[int]] = {}  # relations -> every entity its walks reach
    for p, e in zip(plans.end_plan.tolist(), plans.end_entity.tolist(), strict=True):
        relations = tuple(sub.relation_types[s // 2] for s in _steps(plans, p))
        if relations in reached:
            ends.setdefault(relations, set()).add(e)
    gold = set(torch.nonzero(is_answer).flatten().tolist())
    return [
        CandidatePath(
            relations,
            _steps(plans, p),
            tuple(representative_walk(sub, _steps(plans, p), end)),
            len(answers_reached),
            len(ends[relations] & gold) / len(ends[relations] | gold),
        )
        for relations, (p, end, answers_reached) in reached.items()
    ]


def _steps(plans: Plans, p: int) -> tuple[int, ...]:
    return tuple(s for s in plans.steps[p].tolist() if s >= 0)


def representative_walk(sub: Subgraph, steps: Sequence[int], end: int) -> list[int]:
    """Local entity ids of one walk of signed ``steps`` from a topic to ``end`` under the
    subgraph's walk rule (the walks :func:`enumerate_plans` counts: back through a topic only with
    ``sub.topic_walks``); empty when there is none."""
    topic = torch.arange(sub.num_entities) < sub.num_topics
    landing = sub.candidate_mask()
    parents: list[dict[int, int]] = []  # per step: entity reached -> entity it was reached from
    frontier = topic
    for signed in steps:
        rel, backward = divmod(signed, 2)
        src, dst = (sub.tail, sub.head) if backward else (sub.head, sub.tail)
        crossed = (sub.rel == rel) & frontier[src] & landing[dst]
        step_parents: dict[int, int] = {}
        for s, d in zip(src[crossed].tolist(), dst[crossed].tolist(), strict=True):
            step_parents.setdefault(d, s)
        parents.append(step_parents)
        frontier = torch.zeros_like(topic)
        frontier[list(step_parents)] = True
    if end not in parents[-1]:
        return []
    walk = [end]
    for step_parents in reversed(parents):
        walk.append(step_parents[walk[-1]])
    return walk[::-1]
