"""Plan- and answer-guided evidence: whole reasoning chains, as many as fit a token budget.

Ranked triples spend a budget on the strongest triples, and near a hub topic those are the first
hop's fan-out: "who directed the films starring Tom Hanks" fills 30 triples with STARRED_ACTORS
and shows no director. Here the unit of evidence is a whole chain from a topic to an entity,
along one of the planner's relation paths (:mod:`kgqa.retrieval.models.plans`):

1. For each of the :data:`EVIDENCE_PLANS` likeliest plans, every entity its walks end at, with
   the plan's best walk there (the largest product of triple probabilities, found by one Viterbi
   pass per step over the subgraph's triples).
2. A chain is worth the plan's probability times the extractive reader's probability that its end
   answers the question, so the likeliest plans' walks to the reader's top entities come first,
   and a chain that ends at no candidate (or stops short of the question's last hop, where the
   reader sees no answer) counts little however likely its plan.
3. Chains are taken best first while their tokens fit the budget, down to a floor value (chains
   worth less are noise that only costs the reader tokens; docs/decisions.md). Lines are ReG's
   merged chains
   (:func:`kgqa.retrieval.evidence.chains.merge_chains`): chains with the same topic and plan share one
   line, ``e1 -> r1 -> e2 | e3 -> r2 -> e4 | e5``, so a chain added to a plan already shown costs
   only its new entity names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from kgqa.retrieval.evidence.chains import Chain
from kgqa.retrieval.evidence.items import render_steps
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.models.plans import RankedPlans
from kgqa.retrieval.retriever import Retrieval
from kgqa.types import TokenBudget

#: Plans whose walks are offered, likeliest first.
EVIDENCE_PLANS = 10
#: Names at a merged position are joined with this (as :mod:`kgqa.retrieval.evidence.chains` renders them).
JOIN = " | "


@dataclass(frozen=True, slots=True)
class PlanChain:
    """One candidate chain: the best walk of plan ``plan`` from a topic to ``chain.entities[-1]``.

    Attributes:
        chain: the walk over subgraph triple indices.
        plan: index into the plans of the :class:`RankedPlans` it came from.
        value: plan probability times the reader's probability of the end, in [0, 1].
        walk_score: log of the product of the walk's triple probabilities (ties after ``value``).
    """

    chain: Chain
    plan: int
    value: float
    walk_score: float


def best_walks(sub: Subgraph, steps: Sequence[int], log_scores: np.ndarray) -> list[tuple[Chain, float]]:
    """For every entity the signed plan ``steps`` reaches from a topic, its best walk there.

    Walks come back through a topic only under ``sub.topic_walks``, or under
    ``sub.topic_walks_if_needed`` where the plan has no other walk (as in
    :func:`kgqa.retrieval.models.plans.enumerate_plans`).
    Among walks to the same end the one with the largest sum of ``log_scores`` wins; ties go to
    the lower triple index.

    Args:
        steps: signed steps ``2 * rel + backward`` (no -1 padding).
        log_scores: float array [E], log triple probabilities.

    Returns:
        ``(chain, summed log score)`` per reached entity, by entity id.
    """
    walks = _best_walks(sub, steps, log_scores)
    back = sub.walking_back()
    return _best_walks(back, steps, log_scores) if back is not None and not walks else walks


def _best_walks(sub: Subgraph, steps: Sequence[int], log_scores: np.ndarray) -> list[tuple[Chain, float]]:
    """:func:`best_walks` under ``sub.topic_walks`` alone."""
    n = sub.num_entities
    head, rel, tail = sub.head.numpy(), sub.rel.numpy(), sub.tail.numpy()
    may_end = sub.candidate_mask().numpy()
    best = np.full(n, -np.inf)
    best[: sub.num_topics] = 0.0
    back = []  # per step: entity -> the triple the best walk arrives by (-1 where none)
    for signed in steps:
        relation, backward = divmod(signed, 2)
        src, dst = (tail, head) if backward else (head, tail)
        t = np.flatnonzero((rel == relation) & np.isfinite(best[src]) & may_end[dst])
        cand = best[src[t]] + log_scores[t]
        order = np.lexsort((t, -cand, dst[t]))  # by end, best first, lower triple on ties
        ends, first = np.unique(dst[t][order], return_index=True)
        winners = t[order[first]]
        best = np.full(n, -np.inf)
        best[ends] = cand[order[first]]
        arrive = np.full(n, -1)
        arrive[ends] = winners
        back.append((arrive, src))
    ends = np.flatnonzero(np.isfinite(best))
    entities, triples = [ends], []  # backtracked for all ends at once, last step first
    for arrive, src in reversed(back):
        triples.append(arrive[entities[-1]])
        entities.append(src[triples[-1]])
    by_end_entities = np.stack(entities[::-1], axis=1).tolist()  # [ends, L + 1]
    by_end_triples = np.stack(triples[::-1], axis=1).tolist()  # [ends, L]
    forward = tuple(s % 2 == 0 for s in steps)
    return [
        (Chain(path[0], tuple(path), tuple(crossed), forward), score)
        for path, crossed, score in zip(by_end_entities, by_end_triples, best[ends].tolist(), strict=True)
    ]


def rank_chains(
    sub: Subgraph, plans: RankedPlans, triple_scores: Tensor, entity_scores: Tensor
) -> list[PlanChain]:
    """Candidate chains of the :data:`EVIDENCE_PLANS` likeliest plans, best first.

    Ordered by value (plan probability times ``entity_scores`` of the end), then plan probability,
    then walk score.

    Args:
        triple_scores: FloatTensor [E] triple probabilities in [0, 1] (the walks' weights).
        entity_scores: FloatTensor [N] in [0, 1], the extractive reader's answer probabilities.
    """
    log_scores = np.log(triple_scores.double().clamp(min=1e-12).numpy())
    ends = entity_scores.tolist()
    probability = plans.probabilities.tolist()
    out = []
    for p in torch.argsort(plans.probabilities, descending=True)[:EVIDENCE_PLANS].tolist():
        for chain, walk_score in best_walks(sub, plans.plans.signed_steps(p), log_scores):
            out.append(PlanChain(chain, p, probability[p] * ends[chain.entities[-1]], walk_score))
    out.sort(key=lambda c: (-c.value, -probability[c.plan], -c.walk_score))
    return out


def fill_budget(
    chains: Sequence[PlanChain],
    budget: TokenBudget,
    entity_names: Sequence[str],
    relation_names: Sequence[str],
    rel: Tensor,
) -> list[PlanChain]:
    """The chains, best first, whose merged lines fit ``budget`` (a chain that does not fit is
    skipped and cheaper ones after it may still go in).

    A chain opening a new line (topic and plan not yet shown) costs the tokens of its line; one
    joining a line costs the tokens of ``" | name"`` for each entity new at its position.

    Args:
        entity_names: local entity id -> name; ``relation_names``: local relation id -> name.
        rel: LongTensor [E], the subgraph triples' local relation ids.
    """
    left = budget.tokens
    shown: dict[tuple[int, int], list[set[int]]] = {}  # (root, plan) -> entities at each position
    fragment_cost: dict[int, int] = {}
    kept = []
    for candidate in chains:
        chain = candidate.chain
        positions = shown.get((chain.root, candidate.plan))
        if positions is None:
            text = render_steps(
                [entity_names[e] for e in chain.entities],
                [relation_names[int(rel[t])] for t in chain.triples],
                chain.forward,
            )
            cost = budget.count(text)
        else:
            new = [e for i, e in enumerate(chain.entities) if e not in positions[i]]
            for e in new:
                if e not in fragment_cost:
                    fragment_cost[e] = budget.count(JOIN + entity_names[e])
            cost = sum(fragment_cost[e] for e in new)
        if cost > left:
            continue
        left -= cost
        kept.append(candidate)
        if positions is None:
            shown[(chain.root, candidate.plan)] = [{e} for e in chain.entities]
        else:
            for i, e in enumerate(chain.entities):
                positions[i].add(e)
    return kept


def select_plan_chains(
    retrieval: Retrieval,
    plans: RankedPlans,
    entity_scores: Tensor,
    budget: TokenBudget,
    *,
    floor: float = 0.0,
) -> tuple[Tensor, Tensor, list[Chain]]:
    """Choose one question's evidence chains (steps 1-3 of the module docstring).

    Walks are weighted by the scorer's own triple probabilities (``retrieval.probabilities``);
    chains worth less than ``floor`` are left out whatever the budget.

    Returns:
        ``(selected, scores, chains)``: LongTensor [K] the subgraph triples the chosen chains
        cross, weakest first; FloatTensor [K] each one's score, the best value among the chosen
        chains through it; and the chains over indices into ``selected``.
    """
    sub = retrieval.prepared.subgraph
    names = [retrieval.names.get(e, e) for e in sub.entity_ids]
    ranked = [c for c in rank_chains(sub, plans, retrieval.probabilities, entity_scores) if c.value >= floor]
    kept = fill_budget(ranked, budget, names, sub.relation_types, sub.rel)
    value: dict[int, float] = {}
    for candidate in kept:
        for t in candidate.chain.triples:
            value[t] = max(value.get(t, 0.0), candidate.value)
    order = sorted(value, key=lambda t: (value[t], -t))
    local = {t: i for i, t in enumerate(order)}
    chains = [
        Chain(c.chain.root, c.chain.entities, tuple(local[t] for t in c.chain.triples), c.chain.forward)
        for c in kept
    ]
    selected = torch.tensor(order, dtype=torch.long)
    return selected, torch.tensor([value[t] for t in order]), chains
