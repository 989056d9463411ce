"""Which of several close linking candidates is the question's topic: the one whose neighbourhood
answers it.

Names do not settle every case: the MetaQA tag "tom hanks" and the person Tom Hanks share a
name, and in "what films are about fbi" the lone words "fbi" and "films" both name tags. The
trained retriever already knows how well a topic's neighbourhood fits the question, so each
contender (:meth:`kgqa.link.LinkResult.contenders`, at most a few) is retrieved as the topic and
rated by

- the planner: the raw score of its likeliest relation path, turned into a share by a softmax
  across the contenders (raw scores compare across topics, the per-topic plan probabilities do
  not: a tag with one possible plan gets probability 1);
- the scorer: the probability of its best triple, one that touches the topic.

The fit is the mean of the two (the scorer's alone without a planner); the best fit wins, ties
keep the linker's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kgqa.types import LinkedEntity


@dataclass(frozen=True, slots=True)
class TopicFit:
    """How well one contender fits the question as its topic.

    Attributes:
        entity: the linking candidate.
        plan_share: softmax share of its best plan's raw score across the contenders (None
            without a planner).
        best_triple: the scorer's probability of its best triple touching it, in [0, 1].
        fit: what the contenders are ranked by, in [0, 1].
    """

    entity: LinkedEntity
    plan_share: float | None
    best_triple: float
    fit: float

    def to_dict(self) -> dict[str, Any]:
        share = None if self.plan_share is None else round(self.plan_share, 6)
        return {
            "id": self.entity.id,
            "name": self.entity.name,
            "link_score": round(self.entity.score, 6),
            "plan_share": share,
            "best_triple": round(self.best_triple, 6),
            "fit": round(self.fit, 6),
        }


@dataclass(frozen=True, slots=True)
class Disambiguation:
    """The contenders with their fits, best first; ``margin`` = best fit - runner-up's."""

    ranked: tuple[TopicFit, ...]

    @property
    def margin(self) -> float:
        return self.ranked[0].fit - self.ranked[1].fit if len(self.ranked) > 1 else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"margin": round(self.margin, 6), "contenders": [f.to_dict() for f in self.ranked]}


def rank_topics(
    contenders: Sequence[LinkedEntity],
    best_plan_logits: Sequence[float] | None,
    best_triples: Sequence[float],
) -> tuple[Disambiguation, list[int]]:
    """Rate contenders from their best plan score and best topic triple probability.

    Args:
        contenders: the candidates, in the linker's order.
        best_plan_logits: per contender, the planner's raw score of its likeliest plan (-inf when
            it has none); None without a planner.
        best_triples: per contender, the best probability of a triple touching it.

    Returns:
        The disambiguation (best first) and the contender indices in that order.
    """
    triples = torch.tensor(list(best_triples), dtype=torch.float32)
    shares: list[float | None] = [None] * len(contenders)
    fits = triples
    if best_plan_logits is not None:
        logits = torch.tensor(list(best_plan_logits), dtype=torch.float32)
        share = torch.softmax(logits, dim=0) if torch.isfinite(logits).any() else torch.zeros_like(logits)
        shares = [float(v) for v in share]
        fits = (share + triples) / 2
    order = sorted(range(len(contenders)), key=lambda i: (-float(fits[i]), i))
    ranked = tuple(TopicFit(contenders[i], shares[i], float(triples[i]), float(fits[i])) for i in order)
    return Disambiguation(ranked), order
