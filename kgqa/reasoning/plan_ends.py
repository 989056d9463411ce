"""Which entities the ranked plans allow to answer: a sure plan's ends, and ends tied to every topic.

Both readers read the plans the same way here: the train-free one (:mod:`kgqa.reasoning.plan_reader`)
answers with what these functions keep, the extractive one (:mod:`kgqa.reasoning.extractive`,
``answer.plan_answers``) ranks only what they keep.
"""

from __future__ import annotations

import torch
from torch import Tensor

from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.models.name_match import last_steps
from kgqa.retrieval.models.plans import RankedPlans, plan_ends_from
from kgqa.retrieval.retriever import Retrieval

#: The likeliest plan's probability from which the reader answers among its walk ends only:
#: the plan is likelier than all the others together.
CONFIDENT_PLAN = 0.5
#: Plans, likeliest first, that :func:`ends_tied_to_every_topic` walks topic by topic.
TIED_PLANS = 20
#: Scores within this share of the best tie with it (a plan's ends share its probability exactly).
TIE = 1e-6


def confident_plan_ends(
    ranked: RankedPlans | None, allowed: Tensor, sub: Subgraph | None = None, named: Tensor | None = None
) -> Tensor:
    """BoolTensor [N]: ``allowed`` kept to the walk ends of the likeliest of the ``ranked``
    plans (a retrieval's, ``Retrieval.plans``), and, given its subgraph ``sub`` and which
    entities have names (``named``), of that plan's twins through a mediator filed the other way
    round (:func:`ends_of_mediated_twins`), where its probability is at least
    :data:`CONFIDENT_PLAN` and some end is allowed; else ``allowed``.

    Why: the reader weighs the plan columns beside each entity's text and structure, and where it
    learnt from few questions it can rank an entity off a plan the planner is sure of first
    ("what two continents is turkey on": Travel to Turkey, with the continent plan at 0.86). On
    WebQSP-evidence's tuning questions out of sample for five checkpoints, Hit@1 rose or held in
    each; held out it helps readers trained on few labels and costs some Macro-F1 where the
    reader learnt from all of them and had a second plan's answers right (docs/decisions.md).
    """
    if ranked is None or not ranked.probabilities.numel():
        return allowed
    if float(ranked.probabilities.max()) < CONFIDENT_PLAN:
        return allowed
    ends = torch.zeros_like(allowed) if sub is None else ends_of_mediated_twins(ranked, sub, named)
    ends[ranked.top_ends()] = True
    return allowed & ends if bool((allowed & ends).any()) else allowed


def ends_of_kin_plans(retrieval: Retrieval) -> Tensor:
    """BoolTensor [N]: the walk ends of every plan whose last step is the likeliest plan's (none
    without plans).

    Why: they are the same kind of answer reached another way. Freebase files a fact both ways
    round its mediator ("<-performance actor, performance character" and "actor film,
    performance character"), and an evidence KB holds some of an actor's performances one way
    and some the other, so the likeliest plan alone misses roles the other reaches.
    """
    ends = torch.zeros(retrieval.prepared.subgraph.num_entities, dtype=torch.bool)
    ranked = retrieval.plans
    if ranked is None or not ranked.probabilities.numel():
        return ends
    plans = ranked.plans
    last = last_steps(plans.steps)
    kin = last == last[int(ranked.probabilities.argmax())]
    ends[plans.end_entity[kin[plans.end_plan]]] = True
    return ends


def ends_of_mediated_twins(ranked: RankedPlans | None, sub: Subgraph, named: Tensor | None) -> Tensor:
    """BoolTensor [N]: the walk ends of the plans that spell the likeliest of the ``ranked``
    plans' fact the other way round its mediator: as long as it, the same last step, the steps
    before the one into the mediator the same, and that step, theirs and its, into nameless
    nodes of ``sub`` (``named`` False: :meth:`Subgraph.mediator_steps`); none where the likeliest
    plan has one step or ``named`` is None.

    Why: Freebase files a fact of several parts both ways round its nameless node ("actor
    film" and "<-performance actor" both reach an actor's performances), and an evidence KB
    holds some of an actor's films one way and some the other, so the likeliest plan's ends
    alone are part of the answer set ("what films has daniel craig been in": 10 of 39). The
    same last step out of the same kind of node reaches the same kind of answer.
    """
    ends = torch.zeros(sub.num_entities, dtype=torch.bool)
    if named is None or ranked is None or not ranked.probabilities.numel():
        return ends
    plans = ranked.plans
    best = int(ranked.probabilities.argmax())
    lengths = plans.lengths()
    length = int(lengths[best])
    mediators = sub.mediator_steps(named)
    if length < 2 or not bool(mediators[plans.steps[best, length - 2]]):
        return ends
    steps = plans.steps[:, :length]
    twins = (lengths == length) & (steps[:, -1] == steps[best, -1])
    twins &= mediators[steps[:, -2].clamp(min=0)]
    twins &= (steps[:, : length - 2] == steps[best, : length - 2]).all(dim=1)
    ends[plans.end_entity[twins[plans.end_plan]]] = True
    return ends


def parts_beside_last_step(retrieval: Retrieval) -> Tensor:
    """BoolTensor [N]: the named entities other than the topics one triple from the nameless
    nodes (``Retrieval.named``) where the likeliest plan's walks stand before its last step; none
    where that plan has one step, no walk stands at a nameless node there, or all are named.

    Why: they are the other parts of the facts the plan's answers are parts of, whichever way
    round the KB files each. WebQSP-evidence's KB holds One for the Money's performances as
    performance -> film.performance.actor -> actor, but Katherine Heigl's as Heigl ->
    film.actor.film -> performance: "who plays stephanie plum in one for the money" walks
    starring, then actor, and no plan ending in that step reaches her, though her performance is
    the one the character's name singles out
    (:func:`~kgqa.reasoning.constraints.narrowed_by_words`).
    """
    parts = torch.zeros(retrieval.prepared.subgraph.num_entities, dtype=torch.bool)
    sub, ranked, named = retrieval.prepared.subgraph, retrieval.plans, retrieval.named
    if named is None or ranked is None or not ranked.probabilities.numel():
        return parts
    steps = ranked.plans.signed_steps(int(ranked.probabilities.argmax()))
    if len(steps) < 2:
        return parts
    before_last = torch.zeros_like(parts)
    for topic in range(sub.num_topics):
        before_last |= plan_ends_from(sub, steps[:-1], topic)
    mediators = (before_last & ~named).nonzero().flatten()
    if not mediators.numel():
        return parts
    parts = _neighbours(sub, mediators) & named
    parts[: sub.num_topics] = False
    return parts


def ends_tied_to_every_topic(retrieval: Retrieval) -> Tensor | None:
    """FloatTensor [N]: per entity, the probability of the likeliest of the :data:`TIED_PLANS`
    likeliest plans with a walk from one topic that ends there and a triple from there to each
    other topic, or to a nameless node (``Retrieval.named``) with a triple to it (0 where none);
    None with fewer than two topics or no plans.

    Why: a question naming two ("who plays Forward for Germany", "which movies did tom hanks and
    meg ryan star in together") asks for an answer tied to both. The plans walk from every topic
    at once, so an end walked from Meg Ryan is tied to her by its own walk: only an end walked
    from one topic and tied to the others answers both. Freebase ties the parts of one fact
    through a nameless mediator ("who played Caesar Flickerman in The Hunger Games": the actor
    and the character meet only at a performance node), so such a node ties them too.
    """
    sub, ranked = retrieval.prepared.subgraph, retrieval.plans
    if sub.num_topics < 2 or ranked is None or not ranked.probabilities.numel():
        return None
    near = []
    for topic in range(sub.num_topics):
        touching = _neighbours(sub, sub.topic[topic : topic + 1])
        if retrieval.named is not None:  # and through the nameless facts it is a part of
            mediators = (touching & ~retrieval.named).nonzero().flatten()
            touching |= _neighbours(sub, mediators)
        near.append(touching)
    tied = torch.zeros(sub.num_entities)
    for plan in torch.argsort(ranked.probabilities, descending=True)[:TIED_PLANS].tolist():
        steps = ranked.plans.signed_steps(plan)
        probability = float(ranked.probabilities[plan])
        for topic in range(sub.num_topics):
            ends = plan_ends_from(sub, steps, topic)
            for other in range(sub.num_topics):
                if other != topic:
                    ends &= near[other]
            tied[ends] = tied[ends].clamp(min=probability)
    return tied


def _neighbours(sub: Subgraph, entities: Tensor) -> Tensor:
    """BoolTensor [N]: the entities one triple away from any of ``entities`` (local ids)."""
    near = torch.zeros(sub.num_entities, dtype=torch.bool)
    near[sub.head[torch.isin(sub.tail, entities)]] = True
    near[sub.tail[torch.isin(sub.head, entities)]] = True
    return near


def tied_ends(retrieval: Retrieval, allowed: Tensor) -> Tensor | None:
    """BoolTensor [N]: the ``allowed`` ends of the likeliest plan that ties some allowed entity
    to every topic (:func:`ends_tied_to_every_topic`); None where no plan does (or the question
    has one topic).

    Why: a reader trained on one-topic questions ranks what the likeliest plan reaches from
    either topic ("which movies did tom hanks and meg ryan star in together": 52 co-stars of
    either); the likeliest plan that ties its ends to both is the question's plan, and all its
    ends answer. Generated two-topic questions on the MetaQA graph, reader trained on MetaQA's
    labelled ones: Hit@1 0.059 -> 0.815 (docs/decisions.md).
    """
    tied = ends_tied_to_every_topic(retrieval)
    if tied is None:
        return None
    tied = tied.masked_fill(~allowed, 0.0)
    top = float(tied.max())
    return tied >= top * (1 - TIE) if top > 0 else None
