"""The walk rule: chosen from the training split, applied to plans, walk triples, labels and the
reader's candidates, and carried by the checkpoint (an old checkpoint keeps "never back")."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch
from subgraphs import make_subgraph

from kgqa.retrieval.features import PreparedQuestion, SubgraphSettings
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.labels import answer_mask, relation_path_labels
from kgqa.retrieval.models.plans import enumerate_plans, gold_plans, plan_walk_triples
from kgqa.retrieval.retriever import checkpoint_subgraph
from kgqa.types import QAExample
from retriever_training.examples import TrainingExample
from retriever_training.walk_rule import (
    TOPIC_WALK_SHARE,
    choose_walk_rule,
    returns_through_topic,
    under_walk_rule,
)

# "who is the spouse of e0 's spouse ?" (PathQuestion: the answer is the topic e0 itself)
#   0 e0 -SPOUSE-> e1     1 e1 -SPOUSE-> e0 (the KB holds both directions)
#   2 e1 -SPOUSE-> e2 (e1's other spouse)     3 e0 -CHILDREN-> e3
SPOUSES = make_subgraph(4, [(0, 1), (1, 0), (1, 2), (0, 3)], rels=["SPOUSE", "SPOUSE", "SPOUSE", "CHILDREN"])
SPOUSE_OF_SPOUSE = QAExample(
    "q1", "who is the spouse of e0 's spouse ?", ("e0",), ("e0",), 0, relation_paths=(("spouse", "spouse"),)
)
# "what is the language of the films directed by e0 's director ?": answer e3, never through e0
#   0 e0 -DIRECTED_BY-> e1     1 e2 -DIRECTED_BY-> e1     2 e2 -IN_LANGUAGE-> e3
#   3 e0 -IN_LANGUAGE-> e4 (e0's own language: only a walk back through e0 reaches it)
FILMS = make_subgraph(
    5, [(0, 1), (2, 1), (2, 3), (0, 4)], rels=["DIRECTED_BY", "DIRECTED_BY", "IN_LANGUAGE", "IN_LANGUAGE"]
)
DIRECTOR_FILMS = QAExample(
    "q2",
    "language of films by e0 's director",
    ("e0",),
    ("e3",),
    1,
    relation_paths=(("directed_by", "directed_by", "in_language"),),
)


def _example(sub: Subgraph, qa: QAExample) -> TrainingExample:
    prepared = PreparedQuestion(
        torch.zeros(3, 4),
        sub,
        torch.arange(sub.num_entities),
        torch.arange(len(sub.relation_types)),
        torch.zeros(sub.num_entities, 1),
        hops=3,
    )
    return TrainingExample(qa, prepared, torch.zeros(sub.num_triples), answer_mask(prepared, qa.answers))


def _signed(sub: Subgraph, *names: str) -> list[int]:
    return [2 * sub.relation_types.index(n) for n in names]


def test_the_topic_answers_only_under_the_permissive_rule() -> None:
    never_back, back = SPOUSES, replace(SPOUSES, topic_walks=True)
    assert not never_back.candidate_mask()[0] and back.candidate_mask()[0]
    path = [("spouse", "spouse")]
    assert not relation_path_labels(never_back, ["e0"], path).any()
    assert relation_path_labels(back, ["e0"], path).tolist() == [1, 1, 0, 0]  # e0 -> e1 -> e0, either triple
    assert relation_path_labels(back, ["e2"], path).tolist() == [1, 1, 1, 0]  # e0 -> e1 -> e2
    spouse_twice = _signed(SPOUSES, "SPOUSE", "SPOUSE")
    assert plan_walk_triples(never_back, spouse_twice).tolist() == [True, False, True, False]
    assert plan_walk_triples(back, spouse_twice).tolist() == [True, True, True, False]
    for sub, ends in ((never_back, {2}), (back, {0, 2})):
        plans = enumerate_plans(sub, max_steps=2)
        row = next(p for p, steps in enumerate(plans.steps.tolist()) if steps == spouse_twice)
        assert set(plans.end_entity[plans.end_plan == row].tolist()) == ends
        answers = answer_mask(_example(sub, SPOUSE_OF_SPOUSE).prepared, ["e0"])
        assert bool(answers[0]) == sub.topic_walks
        assert bool(gold_plans(plans, sub, answers, path)[row]) == sub.topic_walks


def test_a_question_returns_when_its_answer_is_the_topic_or_its_named_walk_comes_back() -> None:
    assert returns_through_topic(_example(SPOUSES, SPOUSE_OF_SPOUSE))
    no_path = replace(SPOUSE_OF_SPOUSE, relation_paths=())
    assert returns_through_topic(_example(SPOUSES, no_path))  # the answer is the topic
    assert not returns_through_topic(_example(FILMS, DIRECTOR_FILMS))  # MetaQA-like: never back
    own_language = replace(
        DIRECTOR_FILMS, answers=("e4",), relation_paths=(("directed_by", "directed_by", "in_language"),)
    )
    assert returns_through_topic(_example(FILMS, own_language))  # e0 -> e1 -> e0 -> e4 only
    assert not returns_through_topic(_example(FILMS, replace(own_language, relation_paths=())))


def test_the_rule_is_permissive_from_the_threshold_share_of_returning_questions() -> None:
    total = 100
    needed = math.ceil(TOPIC_WALK_SHARE * total)
    for returning, permissive in ((0, False), (needed - 1, False), (needed, True)):
        train = [_example(SPOUSES, SPOUSE_OF_SPOUSE)] * returning
        train += [_example(FILMS, DIRECTOR_FILMS)] * (total - returning)
        rule = choose_walk_rule(train)
        assert (rule.topic_walks, rule.returning, rule.questions) == (permissive, returning, total)
        assert rule.to_dict()["share"] == returning / total


def test_under_the_permissive_rule_the_examples_are_relabelled() -> None:
    examples = [_example(SPOUSES, SPOUSE_OF_SPOUSE), _example(FILMS, DIRECTOR_FILMS)]
    assert under_walk_rule(examples, False) == examples
    spouse, films = under_walk_rule(examples, True)
    assert spouse.prepared.subgraph.topic_walks and films.prepared.subgraph.topic_walks
    assert spouse.labels.tolist() == [1, 1, 0, 0] and spouse.answers.tolist() == [True, False, False, False]
    assert films.labels.tolist() == [1, 1, 1, 0] and films.answers.tolist() == [
        False,
        False,
        False,
        True,
        False,
    ]


def test_the_checkpoint_carries_the_rule_and_an_old_checkpoint_never_walks_back() -> None:
    caps: dict[str, Any] = {
        "hops": 3,
        "max_triples": 50,
        "max_degree": 10,
        "max_per_node": 5,
        "forward_rounds": 2,
        "reverse_rounds": 2,
    }
    old = {"subgraph": caps}  # written before the rule was learned
    assert checkpoint_subgraph(old) == SubgraphSettings(**caps)
    assert not checkpoint_subgraph(old).topic_walks
    new = {"subgraph": {**caps, "topic_walks": True}}
    assert checkpoint_subgraph(new) == SubgraphSettings(**caps, topic_walks=True)
    # caps from the configuration, the rule from the checkpoint
    assert checkpoint_subgraph(new, SubgraphSettings(hops=2)) == SubgraphSettings(hops=2, topic_walks=True)


def test_refine_judges_a_question_permissive_only_where_the_split_needs_it() -> None:
    from typing import cast

    from retriever_training.refine import Tables, candidate_pools, judged_examples

    spouses = [_example(SPOUSES, replace(SPOUSE_OF_SPOUSE, relation_paths=())) for _ in range(5)]
    films = [_example(FILMS, replace(DIRECTOR_FILMS, relation_paths=())) for _ in range(5)]
    no_tables = cast(Tables, (None, None))  # the quick judgement trains nothing
    # the topic answers: only walks back reach it, and the quick judgement keeps such paths
    judged, pools = judged_examples(spouses + films, no_tables, {})
    assert [ex.prepared.subgraph.topic_walks for ex in judged] == [True] * 5 + [False] * 5
    assert pools == candidate_pools(judged)  # the pools come under each question's judged rule
    # walking back through e0 adds no candidate to the films' pools: all judged never back
    assert not any(ex.prepared.subgraph.topic_walks for ex in judged_examples(films, no_tables, {})[0])
