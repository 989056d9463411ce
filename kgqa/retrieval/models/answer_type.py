"""The answers' kind a question names ("what country", "which team") against a plan's walk ends.

"what country did buddha come from" walks place-of-birth as readily as nationality: both relation
names fit "come from", and only the answers tell a city from a country. The embedding model
knows that "Nepal" is a country and "Kapilavastu" is not, so each plan earns the mean cosine of
its walk ends' name vectors with the noun the question opens with (:func:`answer_noun`), less
the mean over the question's plans (:func:`answer_type_fit`): a small term beside the planner's
logits, weighed by ``retrieval.answer_type``.

Only a question that opens with "what" or "which" and a noun has one; the noun is read by English
grammar alone (the content word right after the question word, past "kind of" and a number, and
past a topic's mention standing before the noun: "which England footballer"). One word: the
next is as often a verb ("what countries border X") as the noun's head ("political party").
Names say little about people ("footballer" sits nearer "Forward" than a player's name), so the
weight stays small: chosen on the tuning parts of WebQSP-evidence, MetaQA, PathQuestion and
WorldCup2014 (docs/decisions.md), where larger weights cost WorldCup2014's two-topic questions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch
from torch import Tensor

from kgqa.retrieval.models.name_match import around_mentions, is_content_word

#: Question words whose noun names the answers' kind ("what country", "which films").
_ASKING = frozenset({"what", "which"})
#: Nouns that say "a kind of" the noun after them ("what kind of music").
_KIND_FRAMES = frozenset({"kind", "kinds", "type", "types", "sort", "sorts"})
_TOKEN = re.compile(r"[a-z0-9][a-z0-9'-]*")


def answer_noun(question: str, mentions: Sequence[str]) -> str | None:
    """The noun ``question`` asks its answers to be, lower case, or None where it names none.

    >>> answer_noun("what country did buddha come from?", ["buddha"])
    'country'
    >>> answer_noun("which England footballer plays at position Forward ?", ["England", "Forward"])
    'footballer'
    >>> answer_noun("what kind of music did franz liszt compose?", ["franz liszt"])
    'music'
    >>> answer_noun("who directed cast away", ["cast away"]) is None
    True
    """
    # a mention before the noun qualifies it: "which England footballer"
    words = [w for piece in around_mentions(question, mentions) for w in _TOKEN.findall(piece.lower())]
    if len(words) < 2 or words[0] not in _ASKING:
        return None
    start = 1
    if len(words) > 3 and words[1] in _KIND_FRAMES and words[2] == "of":
        start = 3
    while start < len(words) and words[start].isdigit():  # "what 5 countries border X"
        start += 1
    if start == len(words) or not is_content_word(words[start]):  # "what is", "what does"
        return None
    return words[start]


def answer_type_fit(
    end_plan: Tensor, end_entity: Tensor, num_plans: int, noun: Tensor, entities: Tensor, named: Tensor
) -> Tensor:
    """FloatTensor [P]: per plan, the mean cosine of ``noun`` (FloatTensor [d]) with the name
    vectors (``entities``, [N, d]) of the plan's named walk ends (``named``, BoolTensor [N]:
    ``EntityTable.has_text``), less the mean over the plans that have one; 0 for a plan that
    ends only at nameless nodes (a Freebase CVT's vector embeds its mid, which says nothing of
    its kind).

    ``end_plan`` / ``end_entity``: the (plan, local entity) pairs where walks end (``Plans``).
    """
    fit = torch.zeros(num_plans)
    keep = named[end_entity]
    if not bool(keep.any()):
        return fit
    plan, entity = end_plan[keep], end_entity[keep]
    cosine = torch.nn.functional.normalize(entities[entity].float(), dim=-1) @ torch.nn.functional.normalize(
        noun.float(), dim=-1
    )
    total = torch.zeros(num_plans).index_add_(0, plan, cosine)
    count = torch.zeros(num_plans).index_add_(0, plan, torch.ones_like(cosine))
    has = count > 0
    fit[has] = total[has] / count[has]
    fit[has] -= fit[has].mean()
    return fit
