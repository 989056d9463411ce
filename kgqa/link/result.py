"""What linking returns: candidates on one score scale, the result of one step, and the
helpers every step builds its candidates with."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kgqa.types import SCHEMA_VERSION, LinkedEntity

SCORE_TOPIC = 1.0
SCORE_BRACKET = 1.0
SCORE_EXACT = 0.95
SCORE_FALLBACK_MAX = 0.9  # vector scores are scaled into (0, SCORE_FALLBACK_MAX]
CONTENDER_MARGIN = 0.15  # full-text and vector candidates this close to the top one are weighed by fit
MAX_CONTENDERS = 3


@dataclass(frozen=True, slots=True)
class LinkResult:
    """Ranked linking candidates for one question.

    Attributes:
        candidates: matched entities, best first, one entry per entity id.
    """

    candidates: tuple[LinkedEntity, ...]
    chosen: tuple[LinkedEntity, ...] | None = None
    ties: tuple[LinkedEntity, ...] | None = None

    @property
    def topics(self) -> tuple[LinkedEntity, ...]:
        """What retrieval starts from: ``chosen`` where the linker set it, else the best candidate
        per mention, in rank order.

        Mentions never overlap (the name step keeps only non-overlapping spans). Full-text and
        vector candidates share one mention, so those steps give one topic. Explicit topic ids are
        all kept.
        """
        if self.chosen is not None:
            return self.chosen
        chosen: list[LinkedEntity] = []
        mentions: set[str] = set()
        ids: set[str] = set()
        for cand in self.candidates:
            if cand.id in ids or (cand.method != "topic" and cand.mention in mentions):
                continue
            chosen.append(cand)
            mentions.add(cand.mention)
            ids.add(cand.id)
        return tuple(chosen)

    @property
    def method(self) -> str:
        """The step that produced the candidates ("" when empty)."""
        return self.candidates[0].method if self.candidates else ""

    def contenders(self, margin: float = CONTENDER_MARGIN, limit: int = MAX_CONTENDERS) -> list[LinkedEntity]:
        """The entities disambiguation weighs as the question's topic (at most ``limit``, the
        first topic first).

        Where the name step set ``ties``, they are the first topic's twins: the same mention
        matched as well, with no cue in the question's text to tell them apart (a person and its
        tag twin in a lower-case question), and where that topic is a one-word name, the proper
        names that end in it ("spielberg": Steven Spielberg, whom "which films did spielberg
        direct" means though MetaQA tags films "spielberg"; beside a one-word proper name, only
        those far better known than it). Otherwise, the candidates scored
        within ``margin`` of the first topic. Other topics (other mentions of the question) never
        compete; explicit topic ids and brackets have no contenders.
        """
        topics = self.topics
        if not topics or topics[0].method in ("topic", "bracket"):
            return list(topics[:1])
        if self.ties is not None:
            return list(self.ties[:limit])
        others = {t.id for t in topics[1:]}
        close = [
            c
            for c in self.candidates
            if c.id not in others and c.score >= topics[0].score - margin and c.id != topics[0].id
        ]
        return [topics[0], *close][:limit]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "candidates": [c.to_dict() for c in self.candidates],
            "topics": [c.id for c in self.topics],
        }


def entity(row: dict[str, Any], score: float, mention: str, method: str) -> LinkedEntity:
    """A candidate from a store row (``id``, ``name``; the id stands in for a missing name)."""
    name = row["name"] or row["id"]
    return LinkedEntity(id=row["id"], name=name, score=score, mention=mention, method=method)


def unique(cands: Iterable[LinkedEntity]) -> tuple[LinkedEntity, ...]:
    """``cands`` in order, each entity id once (its first, best-ranked entry)."""
    seen: set[str] = set()
    out = []
    for cand in cands:
        if cand.id not in seen:
            seen.add(cand.id)
            out.append(cand)
    return tuple(out)


def interleave(groups: Sequence[Sequence[LinkedEntity]]) -> tuple[LinkedEntity, ...]:
    """Best candidate of every mention first (in mention order), then the runners-up; ids unique."""
    ranked: list[LinkedEntity] = []
    seen: set[str] = set()
    depth = max((len(g) for g in groups), default=0)
    for level in range(depth):
        for group in groups:
            if level < len(group) and group[level].id not in seen:
                ranked.append(group[level])
                seen.add(group[level].id)
    return tuple(ranked)
