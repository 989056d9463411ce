"""MoR's structure-aware reranker: scores each candidate from the trajectories that reached it.

Features (MoR 3.3: textual fingerprint, structural fingerprint, traversal identifier), per
candidate, all in [0, 1] or small counts:

- the plan's probability; whether every chain of the plan reached the candidate, and the share
  of chains that did (structural fingerprint);
- per chain, the best trajectory score (link score times the text similarities along it): the
  mean and the minimum over chains; the best anchor text similarity (textual fingerprint);
- the candidate's own similarity to the answer's span, and its direct vector and full-text
  scores (traversal identifier: reached by text, by structure, or both);
- how many trajectories reach it (log), and the hops of the best one.

A small MLP turns them into a logit, trained listwise (softmax over a question's candidates,
all gold candidates as positives). :func:`heuristic_scores` is the untrained ranking used when
no reranker is wanted (the bench's "MoR without reranker").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from kgqa.retrieval.models.nn import Checkpointable
from kgqa.retrieval.mor.traversal import FULLTEXT_CHANNEL, VECTOR_CHANNEL, Candidate

FEATURES = (
    "plan_prob",
    "intersected",
    "chain_share",
    "chain_mean",
    "chain_min",
    "anchor_text",
    "answer_text",
    "vector",
    "fulltext",
    "log_trajectories",
    "best_hops",
    "text_only",
)


def features(candidates: Sequence[Candidate], *, chains: int, plan_prob: float) -> Tensor:
    """FloatTensor [N, len(FEATURES)] for one question's candidates."""
    rows = []
    for cand in candidates:
        best: dict[int, float] = {}
        hops: dict[int, int] = {}
        vector = fulltext = anchor = 0.0
        structural = 0
        for t in cand.trajectories:
            if t.chain == VECTOR_CHANNEL:
                vector = max(vector, t.score)
            elif t.chain == FULLTEXT_CHANNEL:
                fulltext = max(fulltext, t.score)
            else:
                structural += 1
                if t.score >= best.get(t.chain, -1.0):
                    best[t.chain], hops[t.chain] = t.score, len(t.rels)
                if t.text_scores:
                    anchor = max(anchor, t.text_scores[0])
        per_chain = [best.get(c, 0.0) for c in range(chains)]
        top_chain = max(best, key=lambda c: best[c]) if best else None
        rows.append(
            [
                plan_prob,
                float(cand.intersected),
                len(best) / chains if chains else 0.0,
                sum(per_chain) / chains if chains else 0.0,
                min(per_chain) if per_chain else 0.0,
                anchor,
                cand.answer_text,
                vector,
                fulltext,
                math.log1p(structural),
                hops[top_chain] / 3 if top_chain is not None else 0.0,
                float(structural == 0),
            ]
        )
    return torch.tensor(rows, dtype=torch.float32).reshape(-1, len(FEATURES))


def plan_mixture(scored: Sequence[tuple[Sequence[str], Tensor, float]]) -> dict[str, float]:
    """Mix several plans' rankings: node id -> log sum_plans p(plan) softmax_plan(score)(node).

    ``scored`` holds, per executed plan, its candidates' ids, their scores [N] (reranker logits)
    and the plan's weight (its probability); the weights are renormalised over the plans given. A node
    a plan did not reach gets nothing from it. Why a mixture of per-plan distributions: the
    reranker was trained on one plan's candidates at a time, so its logits are comparable within
    a plan only; their softmax is, and the plan's probability weighs how much to trust it.
    """
    total = sum(prob for _, _, prob in scored)
    mass: dict[str, float] = {}
    for ids, scores, prob in scored:
        shares = torch.softmax(scores.double(), 0) * (prob / total if total > 0 else 1 / len(scored))
        for node_id, share in zip(ids, shares.tolist(), strict=True):
            mass[node_id] = mass.get(node_id, 0.0) + share
    return {node_id: math.log(m) if m > 0 else -math.inf for node_id, m in mass.items()}


def heuristic_scores(x: Tensor) -> Tensor:
    """The untrained ranking: chains reached and their trajectory scores first, then the
    answer's own text match, then the direct textual scores as tie-breakers. [N, F] -> [N]."""
    col = {name: i for i, name in enumerate(FEATURES)}
    return (
        x[:, col["chain_share"]] * 2
        + x[:, col["chain_mean"]]
        + x[:, col["answer_text"]]
        + 0.1 * (x[:, col["vector"]] + x[:, col["fulltext"]])
    )


@dataclass(frozen=True, slots=True)
class RerankerConfig:
    """Width of the reranker's hidden layer (``hidden``); the inputs are :data:`FEATURES`."""

    hidden: int = 32

    def to_dict(self) -> dict[str, int]:
        return {"hidden": self.hidden}

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> RerankerConfig:
        return cls(**data)


class TrajectoryReranker(Checkpointable):
    """Logit per candidate from its features: [N, F] -> [N]."""

    KIND = "mor_reranker"
    CONFIG = RerankerConfig

    def __init__(self, config: RerankerConfig) -> None:
        super().__init__(config)
        self.net = nn.Sequential(
            nn.Linear(len(FEATURES), config.hidden), nn.ReLU(), nn.Linear(config.hidden, 1)
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).squeeze(-1)


def listwise_loss(logits: Tensor, positive: Tensor) -> Tensor:
    """-log of the softmax mass on the gold candidates (``positive`` BoolTensor [N], some True)."""
    return torch.logsumexp(logits, 0) - torch.logsumexp(logits[positive], 0)
