"""Answers questions with a MoR checkpoint (text-rich typed graphs) as :class:`kgqa.answer.Answer`.

``kgqa ask`` takes one question path whatever the checkpoint: a KGQA one answers through
:class:`kgqa.pipeline.Asker`, a MoR one through :class:`MorAsker`, and both give the same record,
so one renderer and one JSON shape serve both. What MoR finds maps onto it as follows: each
answer node is an answer (id always set: MoR answers are graph nodes), each of its trajectories
an evidence line whose triples are the relationships it crossed, the anchors its trajectories
start from are the topics, and the plans run are the answer's plans.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kgqa.answer import Answer, AnswerEntity, AnswerPlan, EvidenceLine
from kgqa.errors import ConfigError
from kgqa.retrieval.mor.retriever import MorResult, MorRetriever, RankedNode
from kgqa.retrieval.mor.traversal import Trajectory, node_rows
from kgqa.retrieval.retriever import ScoredTriple
from kgqa.types import LinkedEntity

if TYPE_CHECKING:
    from kgqa.store.protocol import GraphStore

#: What an :class:`Answer` from MoR names as its reader.
MOR_READER = "mor"
#: ``LinkedEntity.method`` of a MoR topic: a plan's named node the question's words anchored.
ANCHOR_METHOD = "anchor"


class MorAsker:
    """Answers questions over a text-rich typed graph with a MoR retriever.

    Args:
        retriever: the MoR retriever (planner, traversal, reranker) over the store.
        max_answers: answer nodes returned per question (``answer.max_answers``).
    """

    def __init__(self, retriever: MorRetriever, *, max_answers: int) -> None:
        self.retriever = retriever
        self.max_answers = max_answers

    @property
    def store(self) -> GraphStore:
        return self.retriever.store

    def ask(self, question: str, *, topic_ids: Sequence[str] = (), hops: int | None = None) -> Answer:
        """Answer one question. MoR finds its own anchors and its plans set their length, so
        ``hops`` is ignored (as it is by a KGQA checkpoint's planner within ``retrieval.hops``).

        Raises:
            ConfigError: ``topic_ids`` were given (MoR anchors every plan node from the words).
        """
        if topic_ids:
            raise ConfigError(
                "a MoR checkpoint anchors its plans from the question's words and takes no topic ids",
                hint="ask without --topic, or use a KGQA checkpoint",
            )
        result = self.retriever.retrieve(question, top_k=self.max_answers)
        ids = [
            i for n in result.nodes for t in n.trajectories for i in (*t.nodes, *(k[2] for k in t.rel_keys))
        ]
        names = {r["id"]: r["name"] for r in node_rows(self.store, ids)}
        return mor_answer(question, result, names)


def mor_answer(question: str, result: MorResult, names: Mapping[str, str]) -> Answer:
    """``result`` as an :class:`Answer` (``names``: node id -> name, for the evidence text).

    Evidence lines are each answer's trajectories, weakest answer first and best last, as the
    KGQA path orders its lines; an answer's score is the softmax of the reranker's scores over
    the answers returned (they are comparable within one question only).
    """
    probabilities = _softmax([n.score for n in result.nodes])
    answers = tuple(
        AnswerEntity(n.name, n.id, p, True) for n, p in zip(result.nodes, probabilities, strict=True)
    )
    lines = [_line(t, names) for node in reversed(result.nodes) for t in reversed(node.trajectories)]
    return Answer(
        question=question,
        topics=_topics(result.nodes, names),
        answers=answers,
        abstained=False,
        evidence=tuple(lines),
        reader=MOR_READER,
        timings_ms=dict(result.timings_ms),
        plans=tuple(AnswerPlan(str(plan), prob) for plan, prob in result.plans),
    )


def _softmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


def _line(trajectory: Trajectory, names: Mapping[str, str]) -> EvidenceLine:
    """One trajectory as an evidence line: ``A -REL- B -REL- C`` along its walk (a textual
    channel's single node is ``C (text match)``), its relationships as triples in the graph's
    direction."""
    steps = [names.get(trajectory.nodes[0], trajectory.nodes[0])]
    for rel, target in zip(trajectory.rel_types, trajectory.nodes[1:], strict=True):
        steps += [f"-{rel}-", names.get(target, target)]
    text = " ".join(steps) + ("" if trajectory.rels else " (text match)")
    triples = tuple(
        ScoredTriple(names.get(h, h), rel, names.get(t, t), trajectory.score, eid, (h, rel, t))
        for eid, (h, rel, t) in zip(trajectory.rels, trajectory.rel_keys, strict=True)
    )
    return EvidenceLine(text, trajectory.score, triples)


def _topics(nodes: Sequence[RankedNode], names: Mapping[str, str]) -> tuple[LinkedEntity, ...]:
    """The anchors the traversing trajectories start from, each once, with their best score."""
    best: dict[str, float] = {}
    for node in nodes:
        for t in node.trajectories:
            if t.rels:
                best[t.nodes[0]] = max(best.get(t.nodes[0], 0.0), t.name_score)
    return tuple(LinkedEntity(i, names.get(i, i), s, "", ANCHOR_METHOD) for i, s in best.items())
