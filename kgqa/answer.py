"""What ``kgqa ask`` returns: answers, the evidence behind them, and how each answer is grounded.

One record whatever answered: a KGQA checkpoint (relation paths, an extractive or LLM reader) or
a MoR one (typed plans and a trajectory reranker) fills the same fields, so ``kgqa ask`` renders
both alike and its JSON has the same keys.

An LLM answers with names; an answer is *grounded* when it names an entity the evidence shows
(compared after SubgraphRAG's answer normalisation), and then carries that entity's id.
Ungrounded answers are kept but flagged, so a user sees when the reader went beyond the graph.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgqa.names import normalize_answer
from kgqa.retrieval.disambiguation import Disambiguation
from kgqa.retrieval.retriever import ScoredTriple
from kgqa.types import LinkedEntity

SCHEMA_VERSION = 1

_HOW_MANY = re.compile(r"\bhow many\b|^\W*(?:what is|what's) the number of\b", re.IGNORECASE)


def asks_how_many(question: str) -> bool:
    """Whether ``question`` asks for a number of things ("how many films did X direct", "what is
    the number of ..."), whose answer is the size of its answer set.

    >>> asks_how_many("How many films did Stanley Kubrick direct?")
    True
    >>> asks_how_many("which films did stanley kubrick direct")
    False
    """
    return bool(_HOW_MANY.search(question))


@dataclass(frozen=True, slots=True)
class AnswerEntity:
    """One answer.

    Attributes:
        name: the answer as the reader gave it (an entity name).
        id: ``Entity.id`` of the evidence entity it names; ``None`` when ungrounded.
        score: in [0, 1], higher is better: the extractive reader's probability, or for MoR the
            reranker's softmax over the answers returned; ``None`` for LLM answers.
        grounded: whether the answer names an entity shown in the evidence.
    """

    name: str
    id: str | None
    score: float | None
    grounded: bool

    def to_dict(self) -> dict[str, Any]:
        score = None if self.score is None else round(self.score, 6)
        return {"name": self.name, "id": self.id, "score": score, "grounded": self.grounded}


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """One evidence line as shown to the reader, with the triples (and element ids) behind it."""

    text: str
    score: float
    triples: tuple[ScoredTriple, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "score": round(self.score, 6),
            "triples": [t.to_dict() for t in self.triples],
        }


@dataclass(frozen=True, slots=True)
class AnswerPlan:
    """A plan the planner ranked: a relation path (KGQA, ``<-`` marks a step crossed from tail
    to head) or a typed metapath (MoR), with the planner's probability in [0, 1]; ``followed``:
    the first answer is one of its walks' ends (KGQA)."""

    text: str
    probability: float
    followed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "probability": round(self.probability, 6), "followed": self.followed}


@dataclass(frozen=True, slots=True)
class Answer:
    """A question answered with evidence.

    Attributes:
        answers: best first.
        abstained: the reader said the evidence does not answer the question.
        evidence: lines weakest first, best last (prompt order).
        reader: ``extractive``, ``train-free``, ``llm:<model id>`` or ``mor``.
        raw_replies: the LLM's replies, the double-check retry included (empty for extractive).
        prompt_tokens / completion_tokens: LLM token counts (0 for extractive).
        timings_ms: milliseconds per stage.
        question_id: set once the answer is saved to the store.
        disambiguation: how the first topic was chosen among close linking candidates (``None``
            when the linker left no choice).
        plans: the planner's plans: the likeliest one the first answer is an end of (marked
            ``followed``), then the likeliest others (empty without a planner).
    """

    question: str
    topics: tuple[LinkedEntity, ...]
    answers: tuple[AnswerEntity, ...]
    abstained: bool
    evidence: tuple[EvidenceLine, ...]
    reader: str
    raw_replies: tuple[str, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    question_id: str | None = None
    disambiguation: Disambiguation | None = None
    plans: tuple[AnswerPlan, ...] = ()

    @property
    def count(self) -> int | None:
        """How many answers there are, where the question asks how many (:func:`asks_how_many`)
        and a reader that returns the whole answer set gave them (extractive, train-free, MoR);
        else None. An LLM reader answers such a question in its own words, often a number.

        Why: a graph holds the things to be counted ("how many films did X direct": the films
        he directed), not their number, so the answer set's size is the answer; its members
        stay listed as the evidence for it.
        """
        if self.reader.startswith("llm") or self.abstained or not asks_how_many(self.question):
            return None
        return len(self.answers)

    def evidence_keys(self) -> list[tuple[str, str, str]]:
        """(head id, type, tail id) of the evidence relationships, each once, in evidence order."""
        return list(dict.fromkeys(t.key for line in self.evidence for t in line.triples))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "question": self.question,
            "question_id": self.question_id,
            "topics": [t.to_dict() for t in self.topics],
            "answers": [a.to_dict() for a in self.answers],
            "count": self.count,
            "abstained": self.abstained,
            "evidence": [line.to_dict() for line in self.evidence],
            "reader": self.reader,
            "raw_replies": list(self.raw_replies),
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "timings_ms": {stage: round(ms, 3) for stage, ms in self.timings_ms.items()},
            "disambiguation": self.disambiguation.to_dict() if self.disambiguation else None,
            "plans": [plan.to_dict() for plan in self.plans],
        }


def ground(names: Sequence[str], evidence_entities: Mapping[str, str]) -> tuple[AnswerEntity, ...]:
    """Match LLM answer names to evidence entities.

    Args:
        names: answers as the reader wrote them, best first.
        evidence_entities: ``Entity.id`` -> name of every entity the evidence mentions.
    """
    by_name: dict[str, str] = {}
    for entity_id, name in evidence_entities.items():
        by_name.setdefault(normalize_answer(name), entity_id)
    grounded = []
    for name in names:
        match = by_name.get(normalize_answer(name))
        grounded.append(AnswerEntity(name, match, None, match is not None))
    return tuple(grounded)
