"""Two-pass triple scoring: a second scorer that also sees how well each entity is reached.

DDE cannot see a mixed-direction path: on MetaQA every relation points from a film, so the films
two hops from the topic film (topic -> writer <- film) get no DDE signal at all, and the first
scorer rates a third-hop "starred actors" triple alike whichever film it hangs from. The second
pass (a :class:`~kgqa.retrieval.models.scorer.TripleScorer` with two more structural columns per
entity) adds each entity's best path probability from a topic under the first pass
(:func:`reach_columns`), so it can tell a film reached through the
writer from one reached through a co-star. The columns ride along as extra DDE columns, so the
factorised scorer needs no change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import Tensor

from kgqa.device import model_device
from kgqa.retrieval.evidence.path_pooling import path_reach
from kgqa.retrieval.features import PreparedQuestion, to_batch
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.scorer import ScorerBatch, TripleScorer

#: Columns :func:`with_path_context` appends to the DDE.
PATH_CONTEXT_DIM = 2
_LOG_REACH_FLOOR = 1e-6


def reach_columns(triple_scores: Tensor, head: Tensor, tail: Tensor, topic: Tensor, num_nodes: int) -> Tensor:
    """[N, 2]: :func:`~kgqa.retrieval.evidence.path_pooling.path_reach` and its log rescaled to [0, 1]."""
    reach = path_reach(triple_scores, head, tail, topic, num_nodes)
    floor = torch.tensor(_LOG_REACH_FLOOR, dtype=reach.dtype)
    log_reach = 1 - torch.log(reach.clamp(min=_LOG_REACH_FLOOR)) / torch.log(floor)
    return torch.stack([reach, log_reach], dim=1)


def with_path_context(prepared: PreparedQuestion, probabilities: torch.Tensor) -> PreparedQuestion:
    """``prepared`` with the first pass's reach columns appended to its DDE: [N, D + 2]."""
    sub = prepared.subgraph
    reach = reach_columns(probabilities, sub.head, sub.tail, sub.topic, sub.num_entities)
    return replace(prepared, dde=torch.cat([prepared.dde, reach.to(prepared.dde.dtype)], dim=1))


def triple_probabilities(
    prepared: PreparedQuestion,
    tables: tuple[EntityTable, RelationTable],
    scorer: TripleScorer,
    path_scorer: TripleScorer | None = None,
) -> torch.Tensor:
    """FloatTensor [E] on the CPU: the scorer's triple probabilities, refined by ``path_scorer``
    when given; each scorer runs on its own device (one copy there and back per pass)."""
    return triple_probabilities_many([prepared], tables, scorer, path_scorer)[0]


def triple_probabilities_many(
    prepared: Sequence[PreparedQuestion],
    tables: tuple[EntityTable, RelationTable],
    scorer: TripleScorer,
    path_scorer: TripleScorer | None = None,
) -> list[torch.Tensor]:
    """:func:`triple_probabilities` of each question, every pass over all of them at once
    (:meth:`ScorerBatch.concat`: the same arithmetic per question as alone, each operation's
    fixed cost and each copy to the device paid once for the lot)."""
    counts = [p.subgraph.num_triples for p in prepared]
    first = ScorerBatch.concat([to_batch(p, tables) for p in prepared]).to(model_device(scorer))
    probabilities = torch.sigmoid(scorer(first)).cpu().split(counts)
    if path_scorer is None:
        return list(probabilities)
    with_context = [with_path_context(p, q) for p, q in zip(prepared, probabilities, strict=True)]
    second = ScorerBatch.concat([to_batch(p, tables) for p in with_context]).to(model_device(path_scorer))
    return list(torch.sigmoid(path_scorer(second)).cpu().split(counts))
