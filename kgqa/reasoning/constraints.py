"""Answers the question's other words single out: through a nameless mediator, or by a
category they bear.

Freebase keeps a fact of several parts as a nameless node (a CVT) joined to each part: Amy
Stiller's role in DodgeBall is a performance node tied to her, to the film and to the character.
"who does amy stiller play in dodgeball" links Amy Stiller, and the plan she -> performance ->
character ends at every role she played; the film is named in the question but, typed in lower
case and short of its full title ("DodgeBall: A True Underdog Story"), is no topic. So an answer
whose mediator also joins an entity named by one of the question's own words is the one asked
for: STAGG's constraints on a CVT's other neighbours (Yih et al. 2015), read here from the
question's words against the names in the subgraph, with no training. On any graph, a word
may also name a category some of the answers bear as a neighbour of their own ("which comedies
did tom hanks star in": the genre Comedy), STAGG's entity constraints on the answer node
(:func:`neighbours_named`).

:func:`constrained` narrows a reader's candidate answers to those that meet the most such words,
where some do and others do not; both readers apply it (:func:`narrowed_by_words`) to the
ends of the plans ending in the likeliest plan's last step (``plan_ends.ends_of_kin_plans``), so
a word chooses among answers of the kind a plan already asks for, or, where it alone singles
them out, among the other parts of the mediators that step leaves.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter, defaultdict

import torch
from torch import Tensor

from kgqa.linking_words import singular
from kgqa.reasoning.plan_ends import ends_of_kin_plans, parts_beside_last_step
from kgqa.retrieval.models.name_match import content_words, relation_name_words
from kgqa.retrieval.retriever import Retrieval

_NAME_WORD = re.compile(r"[^\W_]+")
#: Candidates that must share a named neighbour for the question's naming it to narrow them
#: (:func:`neighbours_named`).
MIN_SHARING = 2


def _folded(text: str) -> str:
    """``text`` in lower case without accents ("Éowyn" -> "eowyn"), other letters kept: a name
    and the question's word meet however either was typed ("who plays eowyn in lord of the
    rings")."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def constraint_counts(retrieval: Retrieval) -> Tensor:
    """LongTensor [N]: per local entity, how many distinct words of the question outside its
    topics' mentions (:func:`~kgqa.retrieval.models.name_match.content_words`) are words of the
    name of another named entity that shares a nameless neighbour with it (topics excluded);
    all 0 where the retrieval has no nameless entity."""
    sub = retrieval.prepared.subgraph
    counts = torch.zeros(sub.num_entities, dtype=torch.long)
    named = retrieval.named
    if named is None or bool(named.all()):
        return counts
    mentions = [t.mention or t.name for t in retrieval.topics]
    # a word the relations' names hold asks for a relation ("what team", "baseball"), not a part
    asked = {_folded(word) for run in content_words(retrieval.question, mentions) for word in run.split()}
    asked -= relation_name_words(sub.relation_types)
    if not asked:
        return counts
    # the named neighbours of each nameless node
    is_named = named.tolist()
    around: dict[int, set[int]] = defaultdict(set)
    for head, tail in zip(sub.head.tolist(), sub.tail.tolist(), strict=True):
        if is_named[head] != is_named[tail]:
            mediator, part = (tail, head) if is_named[head] else (head, tail)
            around[mediator].add(part)
    ids = sub.entity_ids
    said = {
        entity: asked.intersection(_NAME_WORD.findall(_folded(retrieval.names.get(ids[entity], ids[entity]))))
        for entity in set().union(*around.values())
        if entity >= sub.num_topics
    }
    met: dict[int, set[str]] = defaultdict(set)
    for parts in around.values():
        saying = Counter(word for part in parts for word in said.get(part, ()))
        for part in parts:
            own = said.get(part, set())
            met[part].update(word for word, n in saying.items() if n > (word in own))
    for entity, words in met.items():
        counts[entity] = len(words)
    return counts


def narrowed_by_words(retrieval: Retrieval, allowed: Tensor) -> Tensor | None:
    """BoolTensor [N]: the answers among ``allowed`` (BoolTensor [N]) the question's other words
    single out (:func:`constrained`), or None where they choose none. First among the ends of the
    plans ending in the likeliest plan's last step (:func:`constrained` on
    :func:`~kgqa.reasoning.plan_ends.ends_of_kin_plans`); where they choose none there, among
    those and the other parts of the mediators that step leaves
    (:func:`~kgqa.reasoning.plan_ends.parts_beside_last_step`), only where the words choose
    such parts alone.

    Why the last condition: where some of the plan's own ends meet the words as well as another
    part, the plan asks for its ends' kind and the words are no reason to answer with another
    ("who is the voice of kitt": William Daniels, not also Knight Rider). A part that alone
    meets them is the answer filed the other way round its mediator ("who plays stephanie plum
    in one for the money": Katherine Heigl). On WebQSP-evidence's tuning questions this won 3
    train-free and 1 trained (fold checkpoints) and lost none; answering with every part that
    meets the words lost three answer sets' precision (docs/decisions.md).
    """
    kin = allowed & ends_of_kin_plans(retrieval)
    chosen = constrained(retrieval, kin)
    if chosen is not None:
        return chosen
    beside = allowed & parts_beside_last_step(retrieval) & ~kin
    if not bool(beside.any()):
        return None
    chosen = constrained(retrieval, kin | beside)
    return None if chosen is None or bool((chosen & kin).any()) else chosen


def neighbours_named(retrieval: Retrieval, candidates: Tensor) -> Tensor:
    """LongTensor [N]: per local entity among ``candidates`` (BoolTensor [N]), how many of its
    named neighbours in the subgraph (topics aside) the question names whole, by one of its
    words or a run of them outside the topics' mentions, in the singular ("which comedies did tom
    hanks star in": Comedy, a genre of some of his films; "which forwards play for barcelona":
    Forward); 0 elsewhere. A name counts only where at least :data:`MIN_SHARING` candidates
    share it: a category narrows a set, while a name one answer alone bears is as likely a word
    of the question that happens to be a rare tag ("which films did X direct" and the tag
    "film"). A single word that relation names hold asks for a relation, not a neighbour, and a
    name a topic bears too describes the topic ("where is mount st helens volcano": Volcano is
    Mount St. Helens's kind, not the answers'). Only the likeliest plan's own ends count (the
    walk ends of other plans with its last step are no set the name narrows): a name would
    otherwise swap its answers for another plan's ("where is mount st helens volcano", whose KB
    does not say it is one: other volcanoes of the Cascade Range; "what timezone is
    elizabethtown kentucky": the time zones Kentucky is in, not Elizabethtown's)."""
    sub = retrieval.prepared.subgraph
    counts = torch.zeros(sub.num_entities, dtype=torch.long)
    ranked = retrieval.plans
    if ranked is not None and ranked.probabilities.numel():
        top = torch.zeros(sub.num_entities, dtype=torch.bool)
        top[ranked.top_ends()] = True
        candidates = candidates & top
    said = _names_said(retrieval) if int(candidates.sum()) >= MIN_SHARING else set()
    if not said:
        return counts
    edges = list(zip(sub.head.tolist(), sub.tail.tolist(), strict=True))
    # a name a topic bears says what the topic is ("mount st helens volcano")
    beside_topic = {b for h, t in edges for a, b in ((h, t), (t, h)) if a < sub.num_topics}
    named = None if retrieval.named is None else retrieval.named.tolist()
    ids = sub.entity_ids

    @functools.cache
    def is_said(entity: int) -> bool:
        if entity < sub.num_topics or entity in beside_topic or (named is not None and not named[entity]):
            return False
        name = retrieval.names.get(ids[entity], ids[entity])
        return " ".join(map(singular, _NAME_WORD.findall(_folded(name)))) in said

    wanted = candidates.tolist()
    met: dict[int, set[int]] = defaultdict(set)
    for head, tail in edges:
        for answer, other in ((head, tail), (tail, head)):
            if wanted[answer] and is_said(other):
                met[answer].add(other)
    sharing = Counter(other for others in met.values() for other in others)
    for answer, others in met.items():
        counts[answer] = sum(sharing[other] >= MIN_SHARING for other in others)
    return counts


def _names_said(retrieval: Retrieval) -> set[str]:
    """The names the question's words say, lower case without accents, each word in the
    singular: every run of adjacent words of each content-word run outside the topics' mentions,
    but a single word the subgraph's relation names hold."""
    mentions = [t.mention or t.name for t in retrieval.topics]
    relation_words = relation_name_words(retrieval.prepared.subgraph.relation_types)
    said: set[str] = set()
    for run in content_words(retrieval.question, mentions):
        words = [singular(_folded(w)) for w in run.split()]
        for i in range(len(words)):
            for j in range(i + 1, len(words) + 1):
                if j - i > 1 or words[i] not in relation_words:
                    said.add(" ".join(words[i:j]))
    return said


def constrained(retrieval: Retrieval, candidates: Tensor) -> Tensor | None:
    """BoolTensor [N]: the ``candidates`` (BoolTensor [N]) that meet the most of the question's
    words through a mediator (:func:`constraint_counts`) or by a named neighbour
    (:func:`neighbours_named`), where at least one meets one and not every candidate meets as
    many; None where the words choose none."""
    if int(candidates.sum()) < 2:
        return None
    counts = constraint_counts(retrieval) + neighbours_named(retrieval, candidates)
    counts = counts.masked_fill(~candidates, -1)
    most = int(counts.max())
    chosen = counts == most
    if most <= 0 or bool((chosen == candidates).all()):
        return None
    return chosen
