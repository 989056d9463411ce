"""Plan- and answer-guided chains: best walks by hand and against brute force, ranking, budget."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
import torch
from subgraphs import make_subgraph, random_case

from kgqa.retrieval.evidence.chains import Chain
from kgqa.retrieval.evidence.plan_evidence import (
    PlanChain,
    best_walks,
    fill_budget,
    rank_chains,
)
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.models.plans import Plans, RankedPlans, enumerate_plans
from kgqa.types import TokenBudget

# "who directed the films written by e0" (relation ids: DIRECTED_BY 0, WRITTEN_BY 1):
#   t0 e1 -WRITTEN_BY-> e0 (.9)    t1 e1 -DIRECTED_BY-> e2 (.5)    t2 e1 -WRITTEN_BY-> e3 (.8)
#   t3 e4 -WRITTEN_BY-> e0 (.6)    t4 e4 -DIRECTED_BY-> e2 (.9)    t5 e4 -DIRECTED_BY-> e5 (.7)
WRITER = make_subgraph(
    6,
    [(1, 0), (1, 2), (1, 3), (4, 0), (4, 2), (4, 5)],
    rels=["WRITTEN_BY", "DIRECTED_BY", "WRITTEN_BY", "WRITTEN_BY", "DIRECTED_BY", "DIRECTED_BY"],
)
WRITER_SCORES = torch.tensor([0.9, 0.5, 0.8, 0.6, 0.9, 0.7])
WRITTEN_BACK_DIRECTED = [2 * 1 + 1, 2 * 0]  # <-WRITTEN_BY, DIRECTED_BY->
WRITTEN_BACK_WRITTEN = [2 * 1 + 1, 2 * 1]  # <-WRITTEN_BY, WRITTEN_BY-> (co-writers)
NAMES = ["Writer", "Film A", "Director X", "Cowriter", "Film B", "Director Y"]


def _log(scores: torch.Tensor) -> np.ndarray:
    return np.log(scores.double().numpy())


def test_best_walks_keep_the_likeliest_walk_to_each_end() -> None:
    # e2 is reached through e1 (.9 * .5 = .45) and through e4 (.6 * .9 = .54): e4 wins.
    # e5 only through e4 (.6 * .7); e3 is a co-writer, not on this plan; e0 is the topic.
    walks = best_walks(WRITER, WRITTEN_BACK_DIRECTED, _log(WRITER_SCORES))
    assert [(c.entities, c.triples, c.forward) for c, _ in walks] == [
        ((0, 4, 2), (3, 4), (False, True)),
        ((0, 4, 5), (3, 5), (False, True)),
    ]
    assert [math.exp(s) for _, s in walks] == pytest.approx([0.54, 0.42])


def test_best_walks_come_home_only_where_the_plan_reaches_nothing_else() -> None:
    # "the wife of e0 's husband": t0 e0 -SPOUSE-> e1, t1 e1 -SPOUSE-> e0, t2 e1 -SPOUSE-> e2
    kin = make_subgraph(3, [(0, 1), (1, 0)], rels=["SPOUSE", "SPOUSE"])
    scores = _log(torch.tensor([0.9, 0.8]))
    assert best_walks(kin, [0, 0], scores) == []  # never back
    walks = best_walks(replace(kin, topic_walks_if_needed=True), [0, 0], scores)
    assert [(c.entities, c.triples) for c, _ in walks] == [((0, 1, 0), (0, 1))]
    remarried = make_subgraph(3, [(0, 1), (1, 0), (1, 2)], rels=["SPOUSE"] * 3)
    walks = best_walks(replace(remarried, topic_walks_if_needed=True), [0, 0], _log(torch.ones(3) / 2))
    assert [c.entities for c, _ in walks] == [(0, 1, 2)]  # another wife reached: X stays out


def _brute_force(sub: Subgraph, steps: Sequence[int], log_scores: np.ndarray) -> dict[int, float]:
    """Best summed log score per end over every walk (never onto a topic), one walk at a time."""
    walks: list[tuple[int, float]] = [(t, 0.0) for t in range(sub.num_topics)]
    for signed in steps:
        rel, backward = divmod(signed, 2)
        grown = []
        for at, score in walks:
            for t in range(sub.num_triples):
                h, r, tl = int(sub.head[t]), int(sub.rel[t]), int(sub.tail[t])
                src, dst = (tl, h) if backward else (h, tl)
                if r == rel and src == at and dst >= sub.num_topics:
                    grown.append((dst, score + float(log_scores[t])))
        walks = grown
    best: dict[int, float] = {}
    for end, score in walks:
        best[end] = max(best.get(end, -math.inf), score)
    return best


@pytest.mark.parametrize("seed", range(25))
def test_best_walks_match_brute_force_on_random_graphs(seed: int) -> None:
    rng = random.Random(seed)
    sub, _ = random_case(rng, max_nodes=8, max_edges=16, relations="AB")
    log_scores = np.log(np.array([rng.uniform(0.05, 1.0) for _ in range(sub.num_triples)]))
    plans = enumerate_plans(sub, 3)
    for p in range(plans.num_plans):
        steps = [s for s in plans.steps[p].tolist() if s >= 0]
        walks = best_walks(sub, steps, log_scores)
        expected = _brute_force(sub, steps, log_scores)
        assert {c.entities[-1]: s for c, s in walks} == pytest.approx(expected)
        for chain, score in walks:  # each chain is a real walk of the plan with that score
            assert chain.root < sub.num_topics and sum(log_scores[list(chain.triples)]) == pytest.approx(
                score
            )
            for i, (t, fwd) in enumerate(zip(chain.triples, chain.forward, strict=True)):
                ends = (int(sub.head[t]), int(sub.tail[t]))
                assert int(sub.rel[t]) == steps[i] // 2
                assert ends == (
                    (chain.entities[i], chain.entities[i + 1])
                    if fwd
                    else (chain.entities[i + 1], chain.entities[i])
                )


def _ranked(*plans: tuple[list[int], float]) -> RankedPlans:
    steps = torch.full((len(plans), 2), -1, dtype=torch.long)
    for i, (plan, _) in enumerate(plans):
        steps[i, : len(plan)] = torch.tensor(plan)
    empty = torch.empty(0, dtype=torch.long)
    return RankedPlans(Plans(steps, empty, empty), torch.tensor([p for _, p in plans]))


def test_rank_chains_put_likely_plans_to_likely_answers_first() -> None:
    plans = _ranked((WRITTEN_BACK_DIRECTED, 0.7), (WRITTEN_BACK_WRITTEN, 0.2), ([2 * 1 + 1], 0.1))
    # The reader likes Director X (.9) and Director Y (.3), the co-writer a little (.5).
    entity_scores = torch.tensor([0.0, 0.05, 0.9, 0.5, 0.05, 0.3])
    ranked = rank_chains(WRITER, plans, WRITER_SCORES, entity_scores)
    assert [(c.plan, c.chain.entities[-1]) for c in ranked] == [
        (0, 2),  # .7 * .9
        (0, 5),  # .7 * .3
        (1, 3),  # .2 * .5
        (2, 1),  # .1 * .05, Film A's walk (.9) before Film B's (.6)
        (2, 4),
    ]
    assert [c.value for c in ranked] == pytest.approx([0.63, 0.21, 0.1, 0.005, 0.005])


def _chain(entities: tuple[int, ...], triples: tuple[int, ...], plan: int, value: float) -> PlanChain:
    return PlanChain(Chain(entities[0], entities, triples, (False, True)[: len(triples)]), plan, value, 0.0)


def test_fill_budget_charges_a_new_line_whole_and_a_joined_chain_its_new_names() -> None:
    rel = WRITER.rel
    first = _chain((0, 4, 2), (3, 4), 0, 0.6)  # "Writer <- WRITTEN_BY <- Film B -> DIRECTED_BY -> Director X"
    second = _chain((0, 4, 5), (3, 5), 0, 0.5)  # joins: only " | Director Y" is new
    other_plan = _chain((0, 1, 3), (0, 2), 1, 0.4)  # a new line of its own
    line = "Writer <- WRITTEN_BY <- Film B -> DIRECTED_BY -> Director X"
    budget = TokenBudget(len(line) + len(" | Director Y"), len)
    kept = fill_budget([first, second, other_plan], budget, NAMES, WRITER.relation_types, rel)
    assert kept == [first, second]
    # Without room for the first line, a cheaper later chain still goes in.
    cheap = _chain((0, 1), (0,), 2, 0.1)
    budget = TokenBudget(len("Writer <- WRITTEN_BY <- Film A"), len)
    assert fill_budget([first, cheap], budget, NAMES, WRITER.relation_types, rel) == [cheap]
