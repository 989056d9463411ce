"""Evidence for a reader: the selected triples of one question and the lines made from them.

Every organiser (plain triples here, ReG chains in :mod:`kgqa.retrieval.chains`, PathRAG flow
paths in :mod:`kgqa.retrieval.flow`) reads one :class:`EvidenceGraph` and returns
:class:`EvidenceItem` lines in prompt order, weakest first and best last (LLMs weigh the text
next to the question most). Each item keeps the triple indices it renders, so answers can be
grounded and evidence opened in Neo4j Browser by relationship element id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor


@dataclass(frozen=True, slots=True)
class EvidenceGraph:
    """The triples selected for one question, over the question's local entity ids.

    Attributes:
        head: LongTensor [E] local head ids; ``rel``: [E] local relation ids; ``tail``: [E].
        scores: FloatTensor [E] triple scores, higher is better (pooled scores may exceed 1).
        entity_names: local entity id -> display name (covers every id in head/tail).
        relation_names: local relation id -> display name.
        topics: local ids of the topic entities.
    """

    head: Tensor
    rel: Tensor
    tail: Tensor
    scores: Tensor
    entity_names: Sequence[str]
    relation_names: Sequence[str]
    topics: Sequence[int]

    @property
    def num_triples(self) -> int:
        return int(self.head.numel())


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One evidence line: a triple, a chain or a path.

    Attributes:
        text: the line as it goes into the prompt.
        triples: indices into the :class:`EvidenceGraph` arrays, in the order the line reads them.
        entities: local entity ids the line mentions, in reading order.
        score: how strongly the organiser rates the line, higher is better.
    """

    text: str
    triples: tuple[int, ...]
    entities: tuple[int, ...]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "triples": list(self.triples), "score": round(self.score, 6)}


def render_triple(graph: EvidenceGraph, i: int) -> str:
    """Triple ``i`` as SubgraphRAG's prompt writes it: ``(head,relation,tail)``."""
    h, r, t = int(graph.head[i]), int(graph.rel[i]), int(graph.tail[i])
    return f"({graph.entity_names[h]},{graph.relation_names[r]},{graph.entity_names[t]})"


def plain_triples(graph: EvidenceGraph, order: Sequence[int]) -> list[EvidenceItem]:
    """One item per triple, in the given order (pass it best last, e.g. from ``reselect``)."""
    return [
        EvidenceItem(
            render_triple(graph, i),
            (i,),
            (int(graph.head[i]), int(graph.tail[i])),
            float(graph.scores[i]),
        )
        for i in order
    ]
