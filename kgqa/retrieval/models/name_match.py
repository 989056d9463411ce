"""Train-free plan scores: a plan's relations, named in words, matched with the question's words.

On a graph nobody labelled there is no trained planner, but relation names are words too
("directed_by", "plays_in_club", "location.country.languages_spoken"), and the embedding model
already puts "directed" near "directed by" and "club" near "plays in club". So each step of a
plan is matched with a word of the question outside the topic mention, each word at most once,
and a plan scores the sum over its steps of (match - :data:`STEP_COST`): a step pays for itself
only where the question has a word for it, which is what decides the plan's length ("who directed
cast away" has one such word, "where is the club X plays for" two).

Matches are centred per word over the subgraph's relations: a word such as "film" is about as
close to every MetaQA relation and should decide none. Function words carry no relation
(``_FUNCTION_WORDS``, a general English closed-class list), except "when" and "where", which do
(a date, a place). :data:`STEP_COST` was chosen on the training parts of MetaQA 1-hop and
WorldCup2014 WC-P2 (docs/decisions.md); nothing here reads a benchmark.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import torch
from torch import Tensor

from kgqa.embed.protocol import Embedder
from kgqa.retrieval.features import PreparedQuestion

#: What a plan step must match beyond to raise the plan's score (cosine, centred per word).
STEP_COST = 0.25
#: Score scale before the softmax over plans: cosine gaps of a few hundredths become clear odds.
SHARPNESS = 20.0
#: English function words: no relation is named by them ("when" and "where" are left out).
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for by with from and or is are was were be been being do does did "
    "who whom whose what which why how that this these those it its his her their them they he "
    "she i you we me my your our us as also there here than then into out up about can could "
    "would should will shall may might must has have had not no".split()
)
_WORD = re.compile(r"[^\W\d_][\w'-]*")


def find_mention(question: str, mentions: Sequence[str]) -> re.Match[str] | None:
    """Where in ``question`` the first of ``mentions`` that occurs in it stands, regardless of
    case (a question typed in lower case still names its topic), or None."""
    for mention in mentions:
        found = re.search(re.escape(mention), question, flags=re.IGNORECASE) if mention else None
        if found is not None:
            return found
    return None


def content_words(question: str, mentions: Sequence[str]) -> list[str]:
    """The question's words outside the first topic mention found, lower case, in order, without
    function words and words of two letters or fewer.

    >>> content_words("Who directed Cast Away?", ["Cast Away"])
    ['directed']
    """
    text = question.replace("_", " ")  # ids such as Alan_PULIDO are mentioned either way
    found = find_mention(text, [m.replace("_", " ") for m in mentions])
    if found is not None:
        text = f"{text[: found.start()]} {text[found.end() :]}"
    words = (w.lower().strip("'-") for w in _WORD.findall(text))
    return [w for w in words if len(w) > 2 and w not in _FUNCTION_WORDS]


@dataclass(frozen=True, slots=True)
class NameMatchConfig:
    """What :func:`~kgqa.retrieval.models.plans.rank_plans` reads of a planner's config."""

    max_steps: int = 3


class NameMatchPlanner:
    """A planner with nothing to train: :meth:`plan_logits` as the trained planners have, from
    :func:`word_matches` of ``prepared.question_tokens``, which here hold the embeddings of the
    question's :func:`content_words` (:meth:`word_vectors`).
    """

    KIND: ClassVar[str] = "name_match"

    def __init__(self, config: NameMatchConfig | None = None) -> None:
        self.config = config or NameMatchConfig()

    def eval(self) -> NameMatchPlanner:
        return self

    @staticmethod
    def word_vectors(embedder: Embedder, question: str, mentions: Sequence[str]) -> Tensor:
        """FloatTensor [W, d]: the embeddings of ``question``'s :func:`content_words` (W may be 0)."""
        words = content_words(question, mentions)
        if not words:
            return torch.zeros(0, embedder.dimension)
        return embedder.embed(list(dict.fromkeys(words)))

    def plan_logits(self, prepared: PreparedQuestion, relation_emb: Tensor, steps: Tensor) -> Tensor:
        """Logits [P]: :data:`SHARPNESS` x the best sum over a plan's steps of (its relation's
        match with a distinct question word - :data:`STEP_COST`); a step left without a word
        matches 0."""
        words = prepared.question_tokens
        if words is None:
            raise ValueError("NameMatchPlanner needs prepared.question_tokens (its word vectors)")
        matches = word_matches(relation_emb, words)
        return SHARPNESS * best_assignment(matches, steps, STEP_COST)


def word_matches(relation_emb: Tensor, word_emb: Tensor) -> Tensor:
    """FloatTensor [R, W]: cosine of each relation's name with each word, minus that word's mean
    over the R relations."""
    names = torch.nn.functional.normalize(relation_emb, dim=-1)
    words = torch.nn.functional.normalize(word_emb, dim=-1)
    cosines = names @ words.T
    return cosines - cosines.mean(dim=0, keepdim=True) if cosines.numel() else cosines


def best_assignment(matches: Tensor, steps: Tensor, cost: float) -> Tensor:
    """FloatTensor [P]: per plan, the largest sum over its steps of (match - ``cost``) where each
    step takes a distinct word or none (match 0).

    With L steps a step's word in the best choice is among its relation's L best words (the other
    steps take at most L - 1 of them), so only those and "none" are tried: (L + 1)^L choices a
    plan, whatever the question's length.

    Args:
        matches: [R, W] from :func:`word_matches`.
        steps: LongTensor [P, L] as in :class:`~kgqa.retrieval.models.plans.Plans` (-1 past the end).
    """
    num_plans, length = steps.shape
    num_words = matches.shape[1]
    top = torch.topk(matches, min(length, num_words), dim=1) if num_words else None
    relation = steps.clamp(min=0) // 2  # [P, L]
    # Per step: its relation's best words, then "none" (match 0, an index no other step uses).
    none_index = num_words + torch.arange(length).expand(num_plans, -1).unsqueeze(-1)  # [P, L, 1]
    values = [matches.new_zeros(num_plans, length, 1)]
    indices = [none_index]
    if top is not None:
        values.insert(0, top.values[relation])
        indices.insert(0, top.indices[relation])
    value, index = torch.cat(values, dim=2), torch.cat(indices, dim=2)  # [P, L, K]
    choices = _choices(value.shape[2], length)  # [C, L]
    position = torch.arange(length)
    picked_value = value[:, position, choices]  # [P, C, L]
    picked_index = index[:, position, choices]
    distinct = _all_distinct(picked_index)  # [P, C]
    present = (steps >= 0).to(matches.dtype).unsqueeze(1)
    totals = ((picked_value - cost) * present).sum(dim=2).masked_fill(~distinct, float("-inf"))
    return totals.max(dim=1).values if num_plans else totals.new_zeros(0)


def _all_distinct(index: Tensor) -> Tensor:
    """BoolTensor [P, C]: whether the L indices of each choice differ pairwise."""
    same = index.unsqueeze(-1) == index.unsqueeze(-2)  # [P, C, L, L]
    return same.sum(dim=(-1, -2)) == index.shape[-1]


@cache
def _choices(options: int, length: int) -> Tensor:
    """LongTensor [options^length, length]: every choice of one option per step."""
    return torch.tensor(list(itertools.product(range(options), repeat=length)), dtype=torch.long).reshape(
        -1, length
    )
