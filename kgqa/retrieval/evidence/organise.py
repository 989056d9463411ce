"""Scored triples -> the evidence a reader sees: pooling, reselection, then one organisation.

Path Pooling's reselection (coarse top-``coarse_n`` by the scorer, pooled over the coarse set's
own candidate graph, pooled top-``evidence_k`` kept) picks the triples; without pooling the
scorer's top-``evidence_k`` are kept. The kept triples then become prompt lines as plain triples,
ReG evidence chains or PathRAG flow paths, always weakest first and best last. The chains
organisation instead chooses whole chains along the planner's relation paths within a token
budget (``answer.chain_selection = "plans"``, :mod:`kgqa.retrieval.evidence.plan_evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from kgqa.config import AnswerSettings
from kgqa.retrieval.evidence.chains import evidence_chains, merge_chains
from kgqa.retrieval.evidence.flow import flow_paths
from kgqa.retrieval.evidence.items import EvidenceGraph, EvidenceItem, plain_triples
from kgqa.retrieval.evidence.path_pooling import path_pool, positional_rerank
from kgqa.retrieval.evidence.plan_evidence import select_plan_chains
from kgqa.retrieval.retriever import Retrieval
from kgqa.types import TokenBudget

PromptForm = Literal["triples", "paths"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """The organised evidence of one question.

    Attributes:
        graph: the kept triples (index ``i`` of the graph is subgraph triple ``selected[i]``).
        selected: LongTensor [K] subgraph triple indices, best last.
        items: prompt lines, weakest first, best last.
        form: ``triples`` for plain triples, ``paths`` for chains and flow paths.
    """

    graph: EvidenceGraph
    selected: Tensor
    items: list[EvidenceItem]
    form: PromptForm

    def subgraph_triples(self, item: EvidenceItem) -> list[int]:
        """Subgraph triple indices of one item (to look up element ids and names)."""
        return [int(self.selected[i]) for i in item.triples]

    def entities(self) -> set[int]:
        """Local entity ids mentioned by any item: what a grounded answer may be."""
        return {e for item in self.items for e in item.entities}


def select_triples(retrieval: Retrieval, settings: AnswerSettings) -> tuple[Tensor, Tensor]:
    """Reselect the evidence triples.

    Returns:
        (selected, scores): LongTensor [K] subgraph triple indices, best last, and FloatTensor [K]
        the score each was ranked by (pooled where pooling is on, else the scorer's).
    """
    raw = retrieval.scores
    if settings.pooling == "none":
        selected = positional_rerank(raw, settings.evidence_k)
        return selected, raw[selected]
    sub = retrieval.prepared.subgraph
    coarse = torch.argsort(raw, descending=True, stable=True)[: settings.coarse_n]
    generator = torch.Generator().manual_seed(0)
    pooled = path_pool(
        raw[coarse],
        sub.head[coarse],
        sub.tail[coarse],
        sub.topic,
        sub.num_entities,
        kernel=settings.pooling,
        generator=generator,
    )
    keep = positional_rerank(pooled, settings.evidence_k)
    return coarse[keep], pooled[keep]


def retrieved_nodes(graph: EvidenceGraph, count: int) -> list[int]:
    """PathRAG's retrieved nodes: the topics, then the entities of the best triples, ``count`` in all."""
    nodes = list(dict.fromkeys(graph.topics))
    for i in torch.argsort(graph.scores, descending=True, stable=True).tolist():
        for e in (int(graph.head[i]), int(graph.tail[i])):
            if len(nodes) >= count:
                return nodes
            if e not in nodes:
                nodes.append(e)
    return nodes


@dataclass(frozen=True, slots=True)
class ChainGuide:
    """What plan-guided chain selection needs beside the retrieval.

    Attributes:
        entity_scores: FloatTensor [N] in [0, 1], the extractive reader's answer probabilities.
        budget: the evidence lines' token budget.
    """

    entity_scores: Tensor
    budget: TokenBudget


def uses_plan_chains(retrieval: Retrieval, settings: AnswerSettings) -> bool:
    """Whether :func:`organise` selects plan-guided chains here (and so needs a :class:`ChainGuide`)."""
    plan_chains = settings.organisation == "chains" and settings.chain_selection == "plans"
    return plan_chains and retrieval.plans is not None


def organise(
    retrieval: Retrieval, settings: AnswerSettings, *, hops: int, guide: ChainGuide | None = None
) -> Evidence:
    """Select the evidence triples of ``retrieval`` and render them as ``settings.organisation``.

    Args:
        hops: the question's subgraph hop count, the chain length limit unless
            ``settings.chain_hops`` is set.
        guide: required where :func:`uses_plan_chains`.

    Raises:
        ValueError: plan-guided chains are due and ``guide`` is missing (a caller bug).
    """
    sub = retrieval.prepared.subgraph
    plan_chains = uses_plan_chains(retrieval, settings)
    if plan_chains:
        if guide is None or retrieval.plans is None:
            raise ValueError("organise: plan-guided chains need a ChainGuide")
        selected, scores, chains = select_plan_chains(
            retrieval, retrieval.plans, guide.entity_scores, guide.budget, floor=settings.chain_floor
        )
    else:
        selected, scores = select_triples(retrieval, settings)
    graph = EvidenceGraph(
        head=sub.head[selected],
        rel=sub.rel[selected],
        tail=sub.tail[selected],
        scores=scores,
        entity_names=[retrieval.names.get(e, e) for e in sub.entity_ids],
        relation_names=sub.relation_types,
        topics=list(range(sub.num_topics)),
    )
    if plan_chains:
        items = merge_chains(graph, chains)
    elif settings.organisation == "chains":
        items = evidence_chains(graph, max_hops=settings.chain_hops or hops)
    elif settings.organisation == "paths":
        items = flow_paths(
            graph,
            retrieved_nodes(graph, settings.flow_nodes),
            alpha=settings.flow_alpha,
            theta=settings.flow_theta,
            max_hops=settings.flow_max_hops,
            top_k=settings.flow_top_k,
        )
    else:
        items = plain_triples(graph, range(graph.num_triples))
    form: PromptForm = "triples" if settings.organisation == "triples" else "paths"
    return Evidence(graph, selected, items, form)
