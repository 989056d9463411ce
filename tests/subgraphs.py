"""Helpers for the label, plan, scorer and reader tests: hand-written and random candidate
subgraphs, and random scorer batches."""

from __future__ import annotations

import dataclasses
import random

import torch

from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.models.dde import dde
from kgqa.retrieval.models.plans import RankedPlans
from kgqa.retrieval.models.scorer import ScorerBatch
from kgqa.retrieval.retriever import Retrieval


def make_subgraph(
    n: int, edges: list[tuple[int, int]], num_topics: int = 1, rels: list[str] | None = None
) -> Subgraph:
    """Triples ``edges``; ``rels`` names each triple's relationship type (all ``R`` by default)."""
    types = sorted(set(rels or ["R"]))
    return Subgraph(
        entity_ids=[f"e{i}" for i in range(n)],
        relation_types=types,
        head=torch.tensor([h for h, _ in edges], dtype=torch.long),
        rel=torch.tensor([types.index(r) for r in rels] if rels else [0] * len(edges), dtype=torch.long),
        tail=torch.tensor([t for _, t in edges], dtype=torch.long),
        rel_eids=[str(i) for i in range(len(edges))],
        num_topics=num_topics,
    )


def random_case(
    rng: random.Random, max_nodes: int, max_edges: int, relations: str = ""
) -> tuple[Subgraph, list[str]]:
    """A random subgraph without self-loops (triple relations drawn from ``relations`` when
    given), 1-2 topics and 1-3 answers."""
    n = rng.randint(4, max_nodes)
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(3, max_edges))]
    edges = [(h, t) for h, t in edges if h != t] or [(0, 1)]
    rels = [rng.choice(relations) for _ in edges] if relations else None
    sub = make_subgraph(n, edges, num_topics=rng.randint(1, 2), rels=rels)
    answers = [f"e{i}" for i in rng.sample(range(n), rng.randint(1, 3))]
    return sub, answers


#: Embedding width of :func:`random_batch`.
D = 8


def random_batch(seed: int, *, n: int = 9, e: int = 25, r: int = 4) -> ScorerBatch:
    """A random question subgraph in which entities 0, 3 and 7 have no text."""
    gen = torch.Generator().manual_seed(seed)
    head = torch.randint(0, n, (e,), generator=gen)
    tail = torch.randint(0, n, (e,), generator=gen)
    has_text = torch.ones(n, dtype=torch.bool)
    has_text[[0, 3, 7]] = False
    return ScorerBatch(
        question=torch.randn(D, generator=gen),
        entity_emb=torch.randn(n, D, generator=gen),
        has_text=has_text,
        relation_emb=torch.randn(r, D, generator=gen),
        head=head,
        rel=torch.randint(0, r, (e,), generator=gen),
        tail=tail,
        dde=dde(torch.stack([head, tail]), torch.tensor([0, 1]), n),
    )


def sure_of(retrieval: Retrieval, steps: list[str]) -> Retrieval:
    """``retrieval`` with the plan of ``steps`` (as ``RankedPlans.describe`` writes them) at
    probability 0.9, the others sharing the rest."""
    assert retrieval.plans is not None
    plans = retrieval.plans.plans
    described = [p["steps"] for p in retrieval.plans.describe(retrieval.prepared.subgraph, plans.num_plans)]
    order = torch.argsort(retrieval.plans.probabilities, descending=True).tolist()
    probabilities = torch.full((plans.num_plans,), 0.1 / (plans.num_plans - 1))
    probabilities[order[described.index(steps)]] = 0.9
    return dataclasses.replace(retrieval, plans=RankedPlans(plans, probabilities))
