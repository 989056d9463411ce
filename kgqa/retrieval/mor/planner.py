"""The trained MoR planner: which typed plan a question asks for, and which spans fill it.

Plans: every valid plan of the store's schema (:func:`~kgqa.retrieval.mor.plan.enumerate_plans`)
is scored against the question, as :mod:`kgqa.retrieval.models.plans` scores relation paths: a plan is
a bag of named parts (:func:`~kgqa.retrieval.mor.plan.plan_tokens`: answer type, hops, anchors),
and its logit is ``q W x + b x`` for the question embedding ``q`` and the plan's multi-hot ``x``.
A plan never seen in training still gets a score from the parts it shares with seen ones.

Spans: the text restriction is the part of the question between a cue that introduces a
description ('defined as "', 'characterized by') and the text that follows it in the training
questions ('"', '?', '. Which'). Both cue lists are read off the training questions' gold
``text_constraint`` (:func:`learn_cues`), so they follow the phrasing of the data, not of this code.
So are the frame words: the words common to many training questions outside their descriptions
("diseases", "annotated", "feature"), which are how questions are asked, not what they name.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from kgqa.retrieval.models.nn import Checkpointable
from kgqa.retrieval.mor.plan import Metapath, plan_tokens
from kgqa.retrieval.mor.traversal import content_words

#: Words before a span (at most) that make up its left cue.
CUE_WORDS = 4
#: Occurrences a cue needs in training to be kept.
MIN_CUE_COUNT = 2
#: Share of the training questions a word must occur in (outside their descriptions) to be a
#: frame word.
FRAME_SHARE = 0.02


@dataclass(frozen=True, slots=True)
class Cues:
    """Where descriptions start and stop in questions, learnt from gold spans.

    Attributes:
        left: lower-case text right before a span (``'defined as "'``, ``'a finding marked by '``)
            -> precision: the share of its occurrences in training questions that a span follows.
        right: lower-case text right after an unquoted span (``' that are also'``, ``'. which'``)
            -> precision: the share of its occurrences after a span's start that end the span.
        frame: content words of the question phrasing (module docstring); what names a node is
            searched for without them.
    """

    left: dict[str, float]
    right: dict[str, float]
    frame: frozenset[str] = frozenset()

    def unframed(self, text: str) -> str:
        """The content words of ``text`` that are no frame words, space-joined."""
        return " ".join(w for w in content_words(text) if w not in self.frame)

    def span(self, question: str) -> str | None:
        """The description in ``question``, or None when no left cue occurs in it.

        The start follows the most precise left cue found (longer, then earlier, on ties); a
        quoted span ends at the closing quote, another at the earliest right cue of precision
        >= 1/2, else at the question's end.
        """
        lowered = question.lower()
        found = [
            (p, len(c), -at, at + len(c)) for c, p in self.left.items() for at in _occurrences(lowered, c)
        ]
        if not found:
            return None
        start = max(found)[3]
        if lowered[start - 1] == '"':
            stop = question.find('"', start)
            return question[start : stop if stop >= 0 else len(question)].strip()
        stops = [len(question)]
        stops += [at for c, p in self.right.items() if p >= 0.5 for at in _occurrences(lowered, c, start + 1)]
        return question[start : min(stops)].strip().rstrip("?.").strip()


def _occurrences(text: str, sub: str, start: int = 0) -> list[int]:
    return (
        [m.start() for m in re.finditer(re.escape(sub), text[start:])]
        if start == 0
        else [start + m.start() for m in re.finditer(re.escape(sub), text[start:])]
    )


def learn_cues(pairs: Sequence[tuple[str, str]]) -> Cues:
    """Cues from ``(question, gold span)`` pairs: the last 1..CUE_WORDS words before each span
    (and the opening quote alone before a quoted one, so that a question whose words before its
    quote were never seen in training still has its description found; its precision, about
    1/2 since closing quotes count as occurrences, lets any seen cue win over it)
    and the first 1..CUE_WORDS words after each unquoted one, kept when seen MIN_CUE_COUNT times,
    with their precision; and the frame words, found outside the span in at least FRAME_SHARE
    of the questions and MIN_CUE_COUNT of them (:class:`Cues`)."""
    left: collections.Counter[str] = collections.Counter()
    right: collections.Counter[str] = collections.Counter()
    outside: collections.Counter[str] = collections.Counter()
    located = []
    for question, span in pairs:
        lowered = question.lower()
        at = lowered.find(span.lower())
        if at < 0 or not span:
            continue
        located.append((lowered, at, at + len(span)))
        outside.update(set(content_words(lowered[:at] + " " + lowered[at + len(span) :])))
        words = lowered[:at].split(" ")
        for n in range(1, min(CUE_WORDS, len(words) - 1) + 1):
            left[" ".join(words[-n - 1 :])] += 1
        if lowered[:at].endswith('"'):
            left['"'] += 1  # a quote alone opens a description, whatever words come before it
        if not lowered[:at].endswith('"'):
            after = lowered[at + len(span) :]
            if after.strip(" ?."):
                parts = after.split(" ")
                for n in range(1, CUE_WORDS + 1):
                    right[" ".join(parts[: n + 1])] += 1
    left_cues = {c for c, n in left.items() if n >= MIN_CUE_COUNT and c.strip()}
    right_cues = {c for c, n in right.items() if n >= MIN_CUE_COUNT and c.strip(" ?.")}
    left_seen = collections.Counter(c for q, _, _ in located for c in left_cues for _ in _occurrences(q, c))
    right_seen = collections.Counter(
        c
        for q, at, _ in located
        if not q[:at].endswith('"')
        for c in right_cues
        for _ in _occurrences(q, c, at + 1)
    )
    return Cues(
        left={c: left[c] / left_seen[c] for c in sorted(left_cues)},
        right={c: right[c] / right_seen[c] for c in sorted(right_cues)},
        frame=frozenset(w for w, n in outside.items() if n >= max(MIN_CUE_COUNT, FRAME_SHARE * len(located))),
    )


@dataclass(frozen=True, slots=True)
class PlannerConfig:
    """Shape of the plan scorer.

    Attributes:
        emb_dim: question embedding width.
        tokens: the plan-part vocabulary (from the schema's enumerated plans, in a fixed order).
        types: the schema's node types, in a fixed order (:meth:`MetapathScorer.linked_types`).
    """

    emb_dim: int
    tokens: tuple[str, ...]
    types: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"emb_dim": self.emb_dim, "tokens": list(self.tokens), "types": list(self.types)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlannerConfig:
        return cls(int(data["emb_dim"]), tuple(data["tokens"]), tuple(data["types"]))

    @classmethod
    def for_plans(cls, plans: Sequence[Metapath], *, emb_dim: int, types: Sequence[str]) -> PlannerConfig:
        """The config whose vocabulary covers ``plans``."""
        return cls(emb_dim, tuple(sorted({t for p in plans for t in plan_tokens(p)})), tuple(types))


class MetapathScorer(Checkpointable):
    """Logit of each plan for a question: ``[q, l] W x + b x`` (module docstring), where ``l``
    marks the types of the entities the linker found named in the question: "genes linked to
    <X>" asks for another plan when X is a disease than when it is a phenotype, and a sentence
    embedding cannot tell which X is."""

    KIND = "mor_planner"
    CONFIG = PlannerConfig

    def __init__(self, config: PlannerConfig) -> None:
        super().__init__(config)
        self.index = {t: i for i, t in enumerate(config.tokens)}
        self.bilinear = nn.Linear(config.emb_dim + len(config.types), len(config.tokens))

    def linked_types(self, types: Sequence[str]) -> Tensor:
        """FloatTensor [T]: 1 for each schema type among ``types`` (the named entities' types)."""
        out = torch.zeros(len(self.config.types))
        for i, t in enumerate(self.config.types):
            if t in types:
                out[i] = 1.0
        return out

    def encode(self, plans: Sequence[Metapath]) -> Tensor:
        """FloatTensor [P, V]: each plan's multi-hot parts (parts outside the vocabulary dropped)."""
        x = torch.zeros(len(plans), len(self.index))
        for p, plan in enumerate(plans):
            for token in plan_tokens(plan):
                if token in self.index:
                    x[p, self.index[token]] = 1.0
        return x

    def forward(self, question: Tensor, linked: Tensor, plans: Tensor) -> Tensor:
        """question [B, d], linked [B, T] (:meth:`linked_types`), plans [P, V] -> logits [B, P]."""
        return self.bilinear(torch.cat([question, linked], dim=1)) @ plans.T
