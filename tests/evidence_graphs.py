"""Helpers for the organiser tests: hand-written evidence graphs and a compact view of the items."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kgqa.retrieval.evidence.items import EvidenceGraph, EvidenceItem


def make_graph(
    names: list[str], triples: list[tuple[int, str, int, float]], topics: Sequence[int] = (0,)
) -> EvidenceGraph:
    """An evidence graph from (head, relation name, tail, score) rows; relation ids by first use."""
    relations = list(dict.fromkeys(r for _, r, _, _ in triples))
    return EvidenceGraph(
        head=torch.tensor([h for h, _, _, _ in triples], dtype=torch.long),
        rel=torch.tensor([relations.index(r) for _, r, _, _ in triples], dtype=torch.long),
        tail=torch.tensor([t for _, _, t, _ in triples], dtype=torch.long),
        scores=torch.tensor([s for _, _, _, s in triples], dtype=torch.float32),
        entity_names=names,
        relation_names=relations,
        topics=list(topics),
    )


def summary(items: list[EvidenceItem]) -> list[tuple[str, tuple[int, ...], float]]:
    return [(item.text, item.triples, item.score) for item in items]
