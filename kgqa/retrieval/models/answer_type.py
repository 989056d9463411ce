"""The answers' kind a question names ("what country", "which team") against a plan's walk ends.

"what country did buddha come from" walks place-of-birth as readily as nationality: both relation
names fit "come from", and only the answers tell a city from a country. The embedding model
knows that "Nepal" is a country and "Kapilavastu" is not, so each plan earns the mean cosine of
its walk ends' name vectors with the noun the question opens with (:func:`answer_noun`), less
the mean over the question's plans (:func:`answer_type_fit`): a small term beside the planner's
logits, weighed by ``retrieval.answer_type``.

Only a question that opens with "what" or "which" and a noun has one; the noun is read by English
grammar alone (the content word right after the question word, past "kind of" and a number, and
past a topic's mention standing before the noun: "which England footballer"), and the words
after it where they run to an auxiliary or copula ("which political party does"): otherwise the
next word is as often a verb ("what countries border X") as the noun's head.
Names say little about people ("footballer" sits nearer "Forward" than a player's name), so the
weight stays small: chosen on the tuning parts of WebQSP-evidence, MetaQA, PathQuestion and
WorldCup2014 (docs/decisions.md), where larger weights cost WorldCup2014's two-topic questions.

Where the graph's relation names say what their heads are (Freebase's ``domain.type.property``:
:mod:`kgqa.retrieval.graph.kinds`), the ends' kinds say it better than their names: each plan
also earns the mean of its ends' best kind cosine with the noun (:func:`entity_kind_fit`,
:func:`answer_kind_fit`), weighed by ``retrieval.answer_kind``, except where the noun follows
"what kind / type of" (:func:`names_a_kind_of`: the answers are kinds of it, not things of it).
Where plain relation names say what they point at (``plays_in_club``: clubs), a plan whose ends
are of a kind that fits the noun worse than another plan's loses the difference
(:func:`tail_kind_fit`), weighed by ``retrieval.tail_kind``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from kgqa.link.tokens import ASKING_WORDS, asks_kinds_of
from kgqa.retrieval.models.name_match import AUXILIARIES, COPULAS, around_mentions, is_content_word

_TOKEN = re.compile(r"[a-z0-9][a-z0-9'-]*")


def answer_noun(question: str, mentions: Sequence[str]) -> str | None:
    """The noun ``question`` asks its answers to be, lower case, or None where it names none:
    the word after "what" / "which", or the words up to an auxiliary or copula where they run
    there unbroken ("which professional football team do ...": the whole noun phrase).

    >>> answer_noun("what country did buddha come from?", ["buddha"])
    'country'
    >>> answer_noun("which England footballer plays at position Forward ?", ["England", "Forward"])
    'footballer'
    >>> answer_noun("what kind of music did franz liszt compose?", ["franz liszt"])
    'music'
    >>> answer_noun("what political party does obama belong to", ["obama"])
    'political party'
    >>> answer_noun("who directed cast away", ["cast away"]) is None
    True
    """
    # a mention before the noun qualifies it: "which England footballer"
    pieces = [_TOKEN.findall(piece.lower()) for piece in around_mentions(question, mentions)]
    words = [w for piece in pieces for w in piece]
    if len(words) < 2 or words[0] not in ASKING_WORDS:
        return None
    start = 1
    if len(words) > 3 and asks_kinds_of(words[:3]):
        start = 3
    while start < len(words) and words[start].isdigit():  # "what 5 countries border X"
        start += 1
    if start == len(words) or not is_content_word(words[start]):  # "what is", "what does"
        return None
    return _noun_phrase(words, start, _piece_ends(pieces))


def _piece_ends(pieces: Sequence[Sequence[str]]) -> list[int]:
    """Per word of the joined ``pieces``, the index one past its piece's last word."""
    ends: list[int] = []
    for piece in pieces:
        ends += [len(ends) + len(piece)] * len(piece)
    return ends


def _noun_phrase(words: Sequence[str], start: int, piece_ends: Sequence[int]) -> str:
    """The answers' noun from ``words[start]``: the content words from there up to an auxiliary
    or copula of the same piece where they reach one ("political party does": the clause's
    auxiliary follows the noun phrase, so every word before it is the noun's), else the one
    word: without the auxiliary the next word is as often the clause's verb ("what countries
    border X") as the noun's head. Why the whole phrase: its first word alone is often a
    modifier that names another kind ("professional" sits nearer "Midfielder" than a club's
    name; "professional football team" nearer the clubs)."""
    end = start + 1
    while end < piece_ends[start] and is_content_word(words[end]):
        end += 1
    if end == start + 1 or end == piece_ends[start] or words[end] not in AUXILIARIES | COPULAS:
        return words[start]
    return " ".join(words[start:end])


def entity_kind_fit(
    kinds: Sequence[str | None], cosine: Mapping[str, float], entity: Tensor, rel: Tensor, num_entities: int
) -> Tensor:
    """FloatTensor [N]: per local entity, the best ``cosine`` (the question's noun with each kind)
    of the kinds the relations it stands in among the subgraph's triples give it (``kinds`` [R]:
    per local relation, the kind it gives its heads or its tails,
    :func:`~kgqa.retrieval.graph.kinds.head_kind` / :func:`~kgqa.retrieval.graph.kinds.tail_kind`,
    or None; ``entity`` [E]: each triple's head, or its tail, as the kinds are; ``rel`` [E]);
    -inf where it stands in none with a kind.

    Why: an entity's name tells its kind weakly (MiniLM puts "country" at 0.4-0.5 of "Nepal"),
    the graph's schema exactly: Nepal heads ``location.country.*`` facts, Kapilavastu only
    ``location.location.*`` ones.
    """
    relation_fit = torch.tensor([cosine[k] if k is not None else 0.0 for k in kinds])
    keep = torch.tensor([k is not None for k in kinds], dtype=torch.bool)[rel]
    fit = torch.full((num_entities,), float("-inf"))
    return fit.scatter_reduce(0, entity[keep], relation_fit[rel[keep]].float(), reduce="amax")


def names_a_kind_of(question: str) -> bool:
    """Whether ``question`` opens "what kind / type / sort of": its noun names a category whose
    kinds are asked ("what type of art did X make": Painting), not things of that kind (a work
    of art), so the kinds a graph's schema gives entities do not fit it.

    >>> names_a_kind_of("what type of government does australia have?")
    True
    >>> names_a_kind_of("what country did buddha come from?")
    False
    """
    words = _TOKEN.findall(question.lower())
    return len(words) > 3 and asks_kinds_of(words[:3])


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
    cosine = torch.nn.functional.normalize(entities.float(), dim=-1) @ torch.nn.functional.normalize(
        noun.float(), dim=-1
    )
    return centred_plan_means(end_plan, end_entity, num_plans, cosine, named)


def answer_kind_fit(end_plan: Tensor, end_entity: Tensor, num_plans: int, kind_fit: Tensor) -> Tensor:
    """FloatTensor [P]: per plan, the mean :func:`entity_kind_fit` (``kind_fit`` [N]) of its
    walk ends that have a kind, less the mean over the plans that have one; 0 for the others
    (and for every plan on a graph whose relation names say no kind)."""
    return centred_plan_means(end_plan, end_entity, num_plans, kind_fit, torch.isfinite(kind_fit))


def tail_kind_fit(end_plan: Tensor, end_entity: Tensor, num_plans: int, kind_fit: Tensor) -> Tensor:
    """FloatTensor [P]: per plan, the mean over its walk ends of how much worse each end's
    ``kind_fit`` ([N]: the best cosine of the question's noun with the kinds plain relation names
    give an entity as their tail, :func:`~kgqa.retrieval.graph.kinds.tail_kind`; -inf where none
    does) is than the best of any plan's end, an end without a kind counting 0.

    Why only a loss, and none for an end without a kind, where :func:`answer_kind_fit` centres:
    a plain graph's names point at some kinds of thing only, so an entity without one is of an
    unknown kind, not an average one. MetaQA's films are tails of no relation; centred, "which
    movie did X write" raised the plans ending at actors ("movie" sits nearer "actors" than
    "year") above the films (MetaQA tuning questions 784 -> 717 train-free, docs/decisions.md).
    Here a plan loses only where its ends are of a kind that fits the noun worse than another
    plan's: the positions of "which professional football team do players from X play for"
    against the clubs. Per end, not per plan: a film that shares its node with a language
    (MetaQA's "Zulu") costs its plan a third of the difference, not all of it.
    """
    kinded = torch.isfinite(kind_fit)
    at_ends = kinded[end_entity]
    if not bool(at_ends.any()):
        return torch.zeros(num_plans)
    loss = torch.where(kinded, kind_fit - kind_fit[end_entity[at_ends]].max(), torch.zeros_like(kind_fit))
    return _plan_means(end_plan, end_entity, num_plans, loss, torch.ones_like(kinded))[0]


def centred_plan_means(
    end_plan: Tensor, end_entity: Tensor, num_plans: int, values: Tensor, keep: Tensor
) -> Tensor:
    """FloatTensor [P]: per plan, the mean of ``values`` [N] over its walk ends where ``keep``
    [N], less the mean over the plans that have such an end; 0 for a plan without one."""
    fit, has = _plan_means(end_plan, end_entity, num_plans, values, keep)
    if bool(has.any()):
        fit[has] -= fit[has].mean()
    return fit


def _plan_means(
    end_plan: Tensor, end_entity: Tensor, num_plans: int, values: Tensor, keep: Tensor
) -> tuple[Tensor, Tensor]:
    """Per plan, the mean of ``values`` [N] over its walk ends where ``keep`` [N] (0 for a plan
    without one), and BoolTensor [P]: whether it has one."""
    fit = torch.zeros(num_plans)
    kept = keep[end_entity]
    plan, value = end_plan[kept], values[end_entity[kept]]
    total = torch.zeros(num_plans).index_add_(0, plan, value)
    count = torch.zeros(num_plans).index_add_(0, plan, torch.ones_like(value))
    has = count > 0
    fit[has] = total[has] / count[has]
    return fit, has
