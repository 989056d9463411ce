"""Evidence for a reader: the selected triples of one question and the lines made from them.

Every organiser (plain triples here, ReG chains in :mod:`kgqa.retrieval.evidence.chains`, PathRAG flow
paths in :mod:`kgqa.retrieval.evidence.flow`) reads one :class:`EvidenceGraph` and returns
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


def render_steps(names: Sequence[str], relations: Sequence[str], forward: Sequence[bool]) -> str:
    """The text of every path-like line (chains, flow paths), read from its first entity.

    A step walked along its triple (head -> tail) reads ``a -> r -> b``; a step walked against it
    (the line reaches the triple's tail first) reads ``b <- r <- a``, so the arrows always point
    from head to tail and the line still reads left to right: ``e1 -> r1 -> e2 <- r2 <- e3`` says
    ``(e1, r1, e2)`` and ``(e3, r2, e2)``.

    Args:
        names: the ``len(relations) + 1`` entity labels in reading order (a label may already
            join several entities, e.g. ``"e3 | e4"``).
        relations: relation names of the steps; ``forward``: ``True`` where step i goes head -> tail.
    """
    parts = [names[0]]
    for rel, fwd, name in zip(relations, forward, names[1:], strict=True):
        parts.append(f"-> {rel} ->" if fwd else f"<- {rel} <-")
        parts.append(name)
    return " ".join(parts)


def render_path(graph: EvidenceGraph, entities: Sequence[int], triples: Sequence[int]) -> str:
    """Triples walked through ``entities`` as one line, e.g. ``e1 -> r1 -> e2 <- r2 <- e3``.

    Triple ``triples[i]`` joins ``entities[i]`` and ``entities[i + 1]`` in either direction; see
    :func:`render_steps` for the arrows (a self-loop reads forward).

    Raises:
        ValueError: a triple does not join the two entities beside it (a caller bug).
    """
    forward = []
    for i, t in enumerate(triples):
        h, tl, a, b = int(graph.head[t]), int(graph.tail[t]), entities[i], entities[i + 1]
        if (h, tl) != (a, b) and (h, tl) != (b, a):
            raise ValueError(f"render_path: triple {t} ({h} -> {tl}) does not join entities {a} and {b}")
        forward.append((h, tl) == (a, b))
    names = [graph.entity_names[e] for e in entities]
    relations = [graph.relation_names[int(graph.rel[t])] for t in triples]
    return render_steps(names, relations, forward)


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
