"""The train-free reader: answers are where the likeliest plan's walks end.

Without a trained model (a graph nobody labelled, no ``kgqa train`` yet) there is no entity
scorer, but the plans are ranked all the same (:mod:`kgqa.retrieval.models.name_match`), and a plan's
walks from the topic end at exactly the entities it asks for. So an entity's score is the
probability of the best plan ending there (:func:`~kgqa.retrieval.models.plans.plan_reach`), and the
answer set is every entity the best-scored plan reaches, with those its twins reach where it
steps through a nameless mediator that Freebase files both ways round
(:func:`~kgqa.reasoning.plan_ends.ends_of_mediated_twins`).
"""

from __future__ import annotations

import time

import torch
from torch import Tensor

from kgqa.reasoning.constraints import narrowed_by_words
from kgqa.reasoning.extractive import ExtractedAnswer, ranked_answers
from kgqa.reasoning.plan_ends import TIE, ends_of_mediated_twins, ends_tied_to_every_topic
from kgqa.reasoning.recency import latest_or_earliest
from kgqa.retrieval.graph.tables import EntityTable
from kgqa.retrieval.retriever import Retrieval

#: What ``kgqa ask`` says of an answer read this way.
NOTICE = (
    "no trained model: plans were matched to the question by their relation names; train one "
    "with 'kgqa train QUESTIONS' or, without questions, 'kgqa train --from-graph'"
)


def answerable(retrieval: Retrieval) -> Tensor:
    """BoolTensor [N]: :meth:`Retrieval.answerable`, and under ``Subgraph.topic_walks_if_needed``
    the topics where the likeliest plan comes home to them ("the wife of X 's husband" is X).
    Only that plan's: a runner-up that comes home through a Freebase mediator ("drafted", then
    its "player") says nothing, where the likeliest plan's own ends are the mediators."""
    allowed = retrieval.answerable()
    sub, ranked = retrieval.prepared.subgraph, retrieval.plans
    if sub.walking_back() is None or ranked is None or not ranked.probabilities.numel():
        return allowed
    ends = ranked.top_ends()
    allowed[ends[ends < sub.num_topics]] = True
    return allowed


class PlanReader:
    """Ranks a retrieval's entities by the best plan that ends at each; no weights.

    Args:
        entities: the retriever's entity table (``Retriever.tables[0]``). Where given, the answer
            set (every end of the best plan, tied in score) is ordered by how near each answer's
            name lies to the question (:func:`question_fit`); else in the subgraph's order.
        constraints: narrow the answer set to the ends the question's other words single
            out, through a nameless mediator or by a category they bear
            (:func:`~kgqa.reasoning.constraints.narrowed_by_words`), and to the latest or
            earliest by the year they bear where the question asks for the last or first
            (:func:`~kgqa.reasoning.recency.latest_or_earliest`).
    """

    def __init__(self, entities: EntityTable | None = None, *, constraints: bool = True) -> None:
        self.entities = entities
        self.constraints = constraints

    def entity_probabilities(self, retrieval: Retrieval) -> Tensor:
        """FloatTensor [N] in [0, 1]: the probability of the likeliest plan ending at each entity
        (0 where none does, and for entities that may not answer: ``Retrieval.answerable``); with
        several topics, of the likeliest plan whose walk from one topic ends there tied to the
        others (:func:`ends_tied_to_every_topic`), where any plan's end is.

        Raises:
            ValueError: the retrieval ranked no plans (a retriever without a planner).
        """
        sub = retrieval.prepared.subgraph
        if retrieval.plans is None:
            raise ValueError("the train-free reader reads plans, and this retrieval ranked none")
        allowed = answerable(retrieval)
        best = retrieval.plans.reach(sub.num_entities)[:, 0].masked_fill(~allowed, 0.0)
        tied = ends_tied_to_every_topic(retrieval)
        if tied is None:
            return best
        tied = tied.masked_fill(~allowed, 0.0)
        return tied if bool(tied.any()) else best

    def extract_answers(
        self,
        retrieval: Retrieval,
        *,
        top_n: int = 5,
        support: int = 3,
        candidates: Tensor | None = None,
        probabilities: Tensor | None = None,
    ) -> list[ExtractedAnswer]:
        """Every entity tied with the best score (the best plan's ends: the whole answer set; none
        where no plan reaches one) and the ends of its twins through a mediator filed the other
        way round (:func:`~kgqa.reasoning.plan_ends.ends_of_mediated_twins`, after the plan's own
        ends), narrowed to those the question's other words single out
        (:func:`~kgqa.reasoning.constraints.narrowed_by_words`), each with
        its best incident triples; arguments as
        :meth:`~kgqa.reasoning.extractive.ExtractiveReader.extract_answers`, where ``top_n`` is
        for readers that return a fixed number.

        ``candidates`` (the entities the evidence shows) is not applied: the plan names its ends
        whatever the evidence cap kept, and a country's players fill 100 evidence triples before
        their clubs, the answers to "which club has a player from X", show.
        """
        started = time.perf_counter()
        allowed = answerable(retrieval)
        probs = self.entity_probabilities(retrieval) if probabilities is None else probabilities
        shown = probs.masked_fill(~allowed, -1.0)
        top = float(shown.max()) if shown.numel() else 0.0
        reached = allowed & (probs > 0)
        own = reached & (shown >= top * (1 - TIE)) if top > 0 else torch.zeros_like(allowed)
        twins = ends_of_mediated_twins(retrieval.plans, retrieval.prepared.subgraph, retrieval.named)
        best = own | (reached & twins) if bool(own.any()) else own
        if self.constraints:
            chosen = narrowed_by_words(retrieval, reached)
            best = best if chosen is None else chosen
        answers = ranked_answers(retrieval, probs, best, int(best.sum()), support=support)
        if self.entities is not None and len(answers) > 1:
            fit = question_fit(retrieval, self.entities)
            local = retrieval.prepared.subgraph.local_ids()
            # the likeliest plan's own ends first: its twins' complete the set (Hit@1 unmoved)
            answers.sort(key=lambda answer: (not bool(own[local[answer.id]]), -float(fit[local[answer.id]])))
        if self.constraints:
            answers = latest_or_earliest(retrieval, answers)
        retrieval.timings_ms["read"] = (time.perf_counter() - started) * 1e3
        return answers


def question_fit(retrieval: Retrieval, entities: EntityTable) -> Tensor:
    """FloatTensor [N]: the cosine of each local entity's name vector with the question's, plus
    its cosine with the noun the question names its answers by where it names one ("what
    college": ``PreparedQuestion.answer_noun``); 0 for an entity without a vector (only
    answerable, named entities are ever ordered by it).

    Why: the best plan's ends are all its answers, but a person reads the first one first, and
    where the question says more than the plan ("what airport do you fly into in paris": Paris
    Orly before the Beauvais-Tille airport; "what is new york city airport": Newark Liberty
    International before the Downtown Manhattan Heliport) the nearer names come first. On
    WebQSP-evidence's tuning questions train-free, Hit@1 0.544 -> 0.556 with topics from the
    text; on MetaQA, where a right plan's ends are all answers, only the order of a wrong plan's
    ends moves (docs/decisions.md). The whole question's vector carries its noun weakly beside
    the topic's and the verb's words, so the noun is added on its own: "what college did jrr
    tolkien go to" puts Exeter College before St. Philip's School, "what year was the movie
    angels in the outfield released" a year before another film's (WebQSP-evidence +2, MetaQA
    1- and 3-hop +1 each on the tuning parts, none lost; docs/decisions.md).
    """
    names = torch.nn.functional.normalize(entities.matrix[retrieval.prepared.entity_rows].float(), dim=-1)
    fit = names @ torch.nn.functional.normalize(retrieval.prepared.question_emb.float(), dim=-1)
    noun = retrieval.prepared.answer_noun
    if noun is not None:
        fit = fit + names @ torch.nn.functional.normalize(noun.float(), dim=-1)
    return fit
