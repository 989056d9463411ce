"""Relation-path plans: enumeration against brute-force walks, gold plans, reach and the planner."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
from subgraphs import make_subgraph, random_case

from kgqa.errors import ConfigError
from kgqa.retrieval.features import PreparedQuestion, WordRuns
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.models.plans import (
    QUESTION_VIEWS,
    SENTENCE_VIEWS,
    STEP_MENTIONS,
    PlannerConfig,
    Plans,
    PlanScorer,
    RankedPlans,
    enumerate_plans,
    gold_plans,
    plan_guided_scores,
    plan_reach,
    plan_walk_triples,
    question_views,
    rank_plans,
    same_ends,
    through_mediators,
    walk_mentions,
)

# A MetaQA-like 2-hop case around writer e0 ("who directed the films written by e0"):
#   0 e1 -WRITTEN_BY-> e0     2 e1 -WRITTEN_BY-> e3 (co-writer)
#   1 e1 -DIRECTED_BY-> e2    3 e4 -WRITTEN_BY-> e0
#   4 e4 -DIRECTED_BY-> e2 (the same director twice)
WRITER = make_subgraph(
    5,
    [(1, 0), (1, 2), (1, 3), (4, 0), (4, 2)],
    rels=["WRITTEN_BY", "DIRECTED_BY", "WRITTEN_BY", "WRITTEN_BY", "DIRECTED_BY"],
)


#: WRITER's entity table as rank_plans reads it: every entity named.
NAMED = SimpleNamespace(has_text=torch.ones(WRITER.num_entities, dtype=torch.bool))


def _names(plans: Plans, sub: Subgraph) -> list[tuple[str, ...]]:
    return [
        tuple(("<-" if s % 2 else "") + sub.relation_types[s // 2] for s in row if s >= 0)
        for row in plans.steps.tolist()
    ]


def _ends(plans: Plans) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for p, e in zip(plans.end_plan.tolist(), plans.end_entity.tolist(), strict=True):
        out.setdefault(p, set()).add(e)
    return out


def test_enumerate_plans_lists_each_signed_relation_path_with_its_walk_ends() -> None:
    plans = enumerate_plans(WRITER, max_steps=2)
    found = dict(zip(_names(plans, WRITER), (_ends(plans)[p] for p in range(plans.num_plans)), strict=True))
    assert found == {
        ("<-WRITTEN_BY",): {1, 4},
        ("<-WRITTEN_BY", "DIRECTED_BY"): {2},
        ("<-WRITTEN_BY", "WRITTEN_BY"): {3},  # back to e0 is not a walk: never through a topic
    }
    back = enumerate_plans(replace(WRITER, topic_walks=True), max_steps=2)  # the permissive rule
    assert _ends(back)[_names(back, WRITER).index(("<-WRITTEN_BY", "WRITTEN_BY"))] == {0, 3}
    three = enumerate_plans(WRITER, max_steps=3)
    assert ("<-WRITTEN_BY", "DIRECTED_BY", "<-DIRECTED_BY") in _names(three, WRITER)  # the films again
    assert plans.lengths().tolist() == sorted(plans.lengths().tolist())
    pairs = list(zip(plans.end_plan.tolist(), plans.end_entity.tolist(), strict=True))
    assert len(pairs) == len(set(pairs))  # e2 ends two walks of one plan but is listed once


# "the wife of X 's husband", PathQuestion's way (relations stored both ways):
#   t0 e0 -SPOUSE-> e1   t1 e1 -SPOUSE-> e0   t2 e0 -CHILDREN-> e2   t3 e2 -PARENTS-> e0
#   t4 e2 -PARENTS-> e3   t5 e0 -GENDER-> e4
KIN = make_subgraph(
    5,
    [(0, 1), (1, 0), (0, 2), (2, 0), (2, 3), (0, 4)],
    rels=["SPOUSE", "SPOUSE", "CHILDREN", "PARENTS", "PARENTS", "GENDER"],
)


def test_walks_come_home_only_where_a_plan_reaches_nothing_else() -> None:
    never = enumerate_plans(KIN, max_steps=3)
    assert ("SPOUSE", "SPOUSE") not in _names(never, KIN)
    plans = enumerate_plans(replace(KIN, topic_walks_if_needed=True), max_steps=3)
    found = dict(zip(_names(plans, KIN), (_ends(plans)[p] for p in range(plans.num_plans)), strict=True))
    assert found[("SPOUSE", "SPOUSE")] == {0}  # the wife of X 's husband is X
    assert found[("SPOUSE", "SPOUSE", "GENDER")] == {4}  # through X: the sex of X 's husband 's wife
    assert found[("CHILDREN", "PARENTS")] == {3}  # the other parent reached: X stays out
    assert ("SPOUSE", "<-SPOUSE") not in found  # straight back over the triple just crossed
    assert plans.lengths().tolist() == sorted(plans.lengths().tolist())
    back = enumerate_plans(replace(KIN, topic_walks=True), max_steps=3)
    back_ends = dict(zip(_names(back, KIN), (_ends(back)[p] for p in range(back.num_plans)), strict=True))
    never_ends = dict(zip(_names(never, KIN), (_ends(never)[p] for p in range(never.num_plans)), strict=True))
    for name, ends in found.items():  # each plan: its own walks where it has any, else the walks home
        assert ends == never_ends.get(name, back_ends[name])
    assert set(never_ends) <= set(found)


def test_walk_triples_come_home_only_where_a_plan_reaches_nothing_else() -> None:
    home = replace(KIN, topic_walks_if_needed=True)
    through = _signed(home, "SPOUSE", "SPOUSE", "GENDER")
    assert not plan_walk_triples(KIN, through).any()
    assert plan_walk_triples(home, through).tolist() == [True, True, False, False, False, True]
    parents = _signed(home, "CHILDREN", "PARENTS")
    assert plan_walk_triples(home, parents).tolist() == [False, False, True, False, True, False]


def _walks(sub: Subgraph, steps: Sequence[int]) -> list[tuple[int, list[int]]]:
    """Every walk of the signed ``steps`` from a topic, triple by triple (onto a topic only under
    ``sub.topic_walks``): (where it ends, the triples it crosses)."""
    triples = list(zip(sub.head.tolist(), sub.rel.tolist(), sub.tail.tolist(), strict=True))
    walks: list[tuple[int, list[int]]] = [(t, []) for t in range(sub.num_topics)]
    for s in steps:
        rel, backward = divmod(s, 2)
        walks = [
            (t if not backward else h, used + [i])
            for end, used in walks
            for i, (h, r, t) in enumerate(triples)
            if r == rel
            and (t if backward else h) == end
            and ((t if not backward else h) >= sub.num_topics or sub.topic_walks)
        ]
    return walks


def _reference_plans(sub: Subgraph, max_steps: int) -> dict[tuple[int, ...], set[int]]:
    """Every signed step sequence with a walk, and where its walks end."""
    signed = range(2 * len(sub.relation_types))
    out = {}
    for length in range(1, max_steps + 1):
        for seq in itertools.product(signed, repeat=length):
            if walks := _walks(sub, seq):
                out[seq] = {end for end, _ in walks}
    return out


def test_enumerate_plans_matches_brute_force_walks_on_random_graphs() -> None:
    rng = random.Random(5)
    for case in range(30):
        sub, _ = random_case(rng, max_nodes=9, max_edges=16, relations="AB")
        sub = replace(sub, topic_walks=case % 2 == 1)  # both walk rules
        plans = enumerate_plans(sub, max_steps=3)
        ends = _ends(plans)
        got = {tuple(s for s in row if s >= 0): ends[p] for p, row in enumerate(plans.steps.tolist())}
        assert got == _reference_plans(sub, 3)


def test_gold_plans_follow_the_named_relations_else_the_shortest_plans_to_an_answer() -> None:
    plans = enumerate_plans(WRITER, max_steps=2)
    names = _names(plans, WRITER)
    answers = torch.tensor([False, False, True, False, False])  # the director e2
    gold = gold_plans(plans, WRITER, answers, [("written_by", "directed_by")])
    assert [n for n, g in zip(names, gold.tolist(), strict=True) if g] == [("<-WRITTEN_BY", "DIRECTED_BY")]
    # A named path that ends at no answer falls back to the shortest plans that do.
    co_writer = torch.tensor([False, False, False, True, False])
    fallback = gold_plans(plans, WRITER, co_writer, [("directed_by", "directed_by")])
    assert [n for n, g in zip(names, fallback.tolist(), strict=True) if g] == [("<-WRITTEN_BY", "WRITTEN_BY")]
    assert not gold_plans(plans, WRITER, torch.zeros(5, dtype=torch.bool)).any()


# A PathQuestion-like family around e0 ("what is the sex of e0 's offspring ?"), with the
# KB's family relations stored both ways:
#   0 e0 -CHILDREN-> e1    1 e1 -PARENTS-> e0    2 e1 -GENDER-> e2 (male)
#   3 e0 -GENDER-> e3      4 e0 -SPOUSE-> e4     5 e4 -GENDER-> e3 (also female)
FAMILY = make_subgraph(
    5,
    [(0, 1), (1, 0), (1, 2), (0, 3), (0, 4), (4, 3)],
    rels=["CHILDREN", "PARENTS", "GENDER", "GENDER", "SPOUSE", "GENDER"],
)


def test_gold_plans_count_plans_with_the_named_plans_end_set_as_gold() -> None:
    plans = enumerate_plans(FAMILY, max_steps=2)
    names = _names(plans, FAMILY)
    male = torch.tensor([False, False, True, False, False])
    gold = gold_plans(plans, FAMILY, male, [("children", "gender")])
    assert {n for n, g in zip(names, gold.tolist(), strict=True) if g} == {
        ("CHILDREN", "GENDER"),
        ("<-PARENTS", "GENDER"),  # the inverse relation walks to the same entity
    }
    # The spouse's gender ends at the other entity; a plan reaching an answer and more is not gold.
    assert not gold[names.index(("SPOUSE", "GENDER"))]
    assert not gold[names.index(("CHILDREN",))]


def test_same_ends_matches_end_sets_by_brute_force_on_random_graphs() -> None:
    rng = random.Random(5)
    for _ in range(40):
        sub, _ = random_case(rng, max_nodes=7, max_edges=10, relations="AB")
        plans = enumerate_plans(sub, max_steps=2)
        ends = _ends(plans)
        chosen = torch.rand(plans.num_plans, generator=torch.Generator().manual_seed(rng.randrange(99))) < 0.3
        if not chosen.any():
            continue
        wanted = [ends[p] for p in range(plans.num_plans) if chosen[p]]
        expected = [ends[p] in wanted for p in range(plans.num_plans)]
        assert same_ends(plans, chosen, sub.num_entities).tolist() == expected


def _signed(sub: Subgraph, *names: str) -> list[int]:
    """Signed steps from names like ``<-WRITTEN_BY`` (backwards) and ``DIRECTED_BY``."""
    return [2 * sub.relation_types.index(n.removeprefix("<-")) + n.startswith("<-") for n in names]


def test_plan_walk_triples_marks_the_walks_of_a_plan() -> None:
    director = plan_walk_triples(WRITER, _signed(WRITER, "<-WRITTEN_BY", "DIRECTED_BY"))
    assert director.tolist() == [True, True, False, True, True]
    co_writer = plan_walk_triples(WRITER, _signed(WRITER, "<-WRITTEN_BY", "WRITTEN_BY"))
    assert co_writer.tolist() == [True, False, True, False, False]  # e4's only writer is the topic
    assert not plan_walk_triples(WRITER, _signed(WRITER, "DIRECTED_BY")).any()


def _reference_walk_triples(sub: Subgraph, steps: list[int]) -> torch.Tensor:
    """The union of the triples of every walk."""
    on_walk = torch.zeros(sub.num_triples, dtype=torch.bool)
    for _, used in _walks(sub, steps):
        on_walk[used] = True
    return on_walk


def test_plan_walk_triples_match_brute_force_walks_on_random_graphs() -> None:
    rng = random.Random(9)
    for case in range(40):
        sub, _ = random_case(rng, max_nodes=10, max_edges=20, relations="AB")
        sub = replace(sub, topic_walks=case % 2 == 1)  # both walk rules
        steps = [rng.randrange(4) for _ in range(rng.randint(1, 3))]
        assert torch.equal(plan_walk_triples(sub, steps), _reference_walk_triples(sub, steps))


def test_plan_guided_scores_lift_the_walks_of_the_likeliest_plans() -> None:
    plans = enumerate_plans(WRITER, max_steps=2)
    names = _names(plans, WRITER)
    probabilities = torch.tensor(
        [
            {("<-WRITTEN_BY", "DIRECTED_BY"): 0.7, ("<-WRITTEN_BY", "WRITTEN_BY"): 0.2}.get(n, 0.1)
            for n in names
        ]
    )
    ranked = RankedPlans(plans, probabilities)
    # Triple 2 (the co-writer) lies on the 0.2 plan's walk only; the 1-step plan (0.1) adds nothing.
    assert torch.allclose(ranked.triple_support(WRITER), torch.tensor([0.7, 0.7, 0.2, 0.7, 0.7]))
    assert torch.allclose(ranked.triple_support(WRITER, k=1), torch.tensor([0.7, 0.7, 0.0, 0.7, 0.7]))
    scores = plan_guided_scores(torch.tensor([0.9, 0.2, 0.8, 0.9, 0.3]), ranked, WRITER)
    assert torch.allclose(scores, torch.tensor([0.8, 0.45, 0.5, 0.8, 0.5]))


def test_plan_reach_takes_the_best_and_the_summed_probability_of_the_plans_ending_there() -> None:
    plans = Plans(
        steps=torch.tensor([[0], [2], [4]]),
        end_plan=torch.tensor([0, 0, 1, 2]),
        end_entity=torch.tensor([1, 2, 2, 2]),
    )
    reach = plan_reach(torch.tensor([0.5, 0.3, 0.9]), plans, num_nodes=4)
    assert torch.allclose(reach, torch.tensor([[0.0, 0.0], [0.5, 0.5], [0.9, 1.0], [0.0, 0.0]]))


# A Freebase-like country: e0 -RELIGIONS-> nameless records e1, e2 -RELIGION-> e3, e4; e1 -DATE-> e5;
# e6 -NATIONALITY-> e0; e0 -CAPITAL-> nameless e7, where no step leads on.
COUNTRY = make_subgraph(
    8,
    [(0, 1), (0, 2), (1, 3), (2, 4), (1, 5), (6, 0), (0, 7)],
    rels=["RELIGIONS", "RELIGIONS", "RELIGION", "RELIGION", "DATE", "NATIONALITY", "CAPITAL"],
)
COUNTRY_NAMED = torch.tensor([True, False, False, True, True, True, True, False])


def test_a_plan_ending_at_nameless_nodes_hands_its_probability_to_the_steps_through_them() -> None:
    plans = enumerate_plans(COUNTRY, 2)
    names = _names(plans, COUNTRY)
    at = {name: names.index(name) for name in names}
    probabilities = torch.full((plans.num_plans,), 0.01)
    probabilities[at[("RELIGIONS",)]] = 0.8
    probabilities[at[("RELIGIONS", "RELIGION")]] = 0.03
    probabilities[at[("RELIGIONS", "DATE")]] = 0.01
    probabilities[at[("CAPITAL",)]] = 0.1
    probabilities /= probabilities.sum()
    passed = through_mediators(probabilities, plans, COUNTRY_NAMED)
    assert float(passed[at[("RELIGIONS",)]]) == 0.0
    # the 0.8 goes 3:1 to the two steps through the records, as the planner rated them
    through = probabilities[at[("RELIGIONS",)]] + probabilities[at[("RELIGIONS", "RELIGION")]]
    assert float(passed[at[("RELIGIONS", "RELIGION")]]) == pytest.approx(
        float(through - probabilities[at[("RELIGIONS",)]] / 4)
    )
    assert float(passed.argmax()) == at[("RELIGIONS", "RELIGION")]
    # no step leads on from the capital's record, and named ends keep their probability
    for kept in [("CAPITAL",), ("<-NATIONALITY",)]:
        assert float(passed[at[kept]]) == float(probabilities[at[kept]])
    assert float(passed.sum()) == pytest.approx(1.0)
    everything_named = torch.ones(COUNTRY.num_entities, dtype=torch.bool)
    assert torch.equal(through_mediators(probabilities, plans, everything_named), probabilities)


def _handed_on_one_plan_at_a_time(
    probabilities: torch.Tensor, plans: Plans, named: torch.Tensor
) -> torch.Tensor:
    """through_mediators by its contract, one stuck plan at a time, shortest first."""
    out = probabilities.clone()
    lengths = plans.lengths()
    for plan in range(plans.num_plans):
        ends = plans.end_entity[plans.end_plan == plan]
        length = int(lengths[plan])
        if not ends.numel() or bool(named[ends].any()) or length == plans.steps.shape[1]:
            continue
        longer = (lengths == length + 1) & (plans.steps[:, :length] == plans.steps[plan, :length]).all(dim=1)
        if bool(longer.any()):
            share = probabilities[longer]
            out[longer] += out[plan] * (share / share.sum())
            out[plan] = 0.0
    return out


def test_handing_on_through_nameless_nodes_matches_one_plan_at_a_time_on_random_graphs() -> None:
    rng = random.Random(7)
    for _ in range(60):
        sub, _ = random_case(rng, max_nodes=9, max_edges=16, relations="ABC")
        plans = enumerate_plans(sub, 3)
        named = torch.tensor([rng.random() < 0.6 for _ in range(sub.num_entities)])
        probabilities = torch.softmax(
            torch.randn(plans.num_plans, generator=torch.Generator().manual_seed(1)), 0
        )
        expected = _handed_on_one_plan_at_a_time(probabilities, plans, named)
        assert torch.allclose(through_mediators(probabilities, plans, named), expected, atol=1e-7)


def test_handing_on_finds_the_parent_plans_of_long_plans_over_large_relation_ids() -> None:
    # steps of ids near 2 million, four deep (a number made of them would pass 64 bits)
    a, b, c, d = 1_999_999, 1_500_000, 7, 1_999_998
    plans = Plans(
        steps=torch.tensor([[a, -1, -1, -1], [a, b, -1, -1], [a, b, c, -1], [a, b, c, d], [b, -1, -1, -1]]),
        end_plan=torch.tensor([0, 1, 2, 3, 4]),
        end_entity=torch.tensor([0, 1, 2, 3, 4]),
    )
    named = torch.tensor([False, False, False, True, True])  # the first three plans end at mediators
    passed = through_mediators(torch.tensor([0.4, 0.2, 0.1, 0.1, 0.2]), plans, named)
    assert passed.tolist() == pytest.approx([0.0, 0.0, 0.0, 0.8, 0.2])


def test_a_trained_planner_answers_through_nameless_nodes() -> None:
    relations = len(COUNTRY.relation_types)
    tables = (SimpleNamespace(has_text=COUNTRY_NAMED), SimpleNamespace(matrix=torch.randn(relations, 4)))
    prepared = PreparedQuestion(
        torch.randn(3, 4), COUNTRY, torch.arange(8), torch.arange(relations), torch.zeros(8, 1), 2
    )
    with torch.inference_mode():
        ranked = rank_plans(_untrained_planner(), prepared, tables)  # type: ignore[arg-type]
    names = _names(ranked.plans, COUNTRY)
    by_name = dict(zip(names, ranked.probabilities.tolist(), strict=True))
    alike = 1 / len(names)  # an untrained planner rates every plan alike
    assert by_name[("RELIGIONS",)] == 0.0
    assert by_name[("RELIGIONS", "RELIGION")] == pytest.approx(1.5 * alike)
    assert by_name[("CAPITAL",)] == pytest.approx(alike)


@pytest.mark.parametrize(
    ("step_mentions", "name_match"), [(0, False), (2, False), (3, False), (0, True), (2, True)]
)
def test_planner_factorised_first_layer_equals_the_concatenation(
    step_mentions: int, name_match: bool
) -> None:
    torch.manual_seed(1)
    config = PlannerConfig(
        emb_dim=8, hidden=16, max_steps=3, step_mentions=step_mentions, name_match=name_match
    )
    model = PlanScorer(config).eval()
    question, relations = torch.randn(QUESTION_VIEWS, 8), torch.randn(4, 8)
    steps = torch.randint(0, 8, (50, 3))
    steps[:10, 1:] = -1
    steps[10:25, 2] = -1
    torch.testing.assert_close(
        model(question, relations, steps), model.forward_concat(question, relations, steps)
    )
    short = steps[:10, :1]  # plans of one step, not padded to max_steps
    torch.testing.assert_close(
        model(question, relations, short), model.forward_concat(question, relations, short)
    )


@pytest.mark.parametrize("name_match", [False, True])
def test_plan_scorer_scores_a_batch_of_questions_as_each_alone(name_match: bool) -> None:
    torch.manual_seed(2)
    model = PlanScorer(PlannerConfig(emb_dim=8, hidden=16, max_steps=3, name_match=name_match)).eval()
    questions = []
    for relations, plans, length in ((4, 20, 3), (7, 35, 3), (1, 3, 1)):  # the last not padded to 3 steps
        steps = torch.randint(0, 2 * relations, (plans, length))
        steps[: plans // 3, 1:] = -1
        questions.append((torch.randn(QUESTION_VIEWS, 8), torch.randn(relations, 8), steps))
    together = model.logits_many(*zip(*questions, strict=True))  # plan_batch pads and concatenates
    for logits, (q, r, s) in zip(together, questions, strict=True):
        torch.testing.assert_close(logits, model(q, r, s))


def test_question_views_split_the_question_at_the_first_topic_mention_found() -> None:
    question = "who acted in the films written by Kevin Falls"
    assert question_views(question, ["Nobody", "Kevin Falls"])[:SENTENCE_VIEWS] == [
        question,
        "who acted in the films written by",
        ".",
    ]
    assert question_views("Kevin Falls wrote what", ["Kevin Falls"])[:SENTENCE_VIEWS] == [
        "Kevin Falls wrote what",
        ".",
        "wrote what",
    ]
    assert question_views("who wrote kevin falls films", ["Kevin Falls"])[:SENTENCE_VIEWS] == [
        "who wrote kevin falls films",
        "who wrote",
        "films",
    ]


def test_question_views_split_at_a_topic_the_question_names_in_part() -> None:
    # Topics given by their full names (WebQSP's q_entity), typed short of them: the words of
    # the name the question has, accents and punctuation aside, from and to a content word.
    views = question_views("what town was martin luther king assassinated in?", ["Martin Luther King, Jr."])
    assert views[1:SENTENCE_VIEWS] == ["what town was", "assassinated in?"]
    assert question_views("who is michael buble?", ["Michael Bublé"])[1:SENTENCE_VIEWS] == ["who is", "?"]
    assert question_views("what is obama's wife name?", ["Barack Obama"])[1:SENTENCE_VIEWS] == [
        "what is",
        "wife name?",
    ]
    # a topic the question spells whole comes before one it names in part
    views = question_views("who is the wife of barack obama", ["Michelle Obama", "Barack Obama"])
    assert views[1:SENTENCE_VIEWS] == ["who is the wife of", "."]
    # no word of the topic's name: no split
    assert question_views("who was obama's vice president", ["Joe Biden"])[1:SENTENCE_VIEWS] == [
        "who was obama's vice president",
        "who was obama's vice president",
    ]


def test_question_views_end_with_the_relation_mentions_in_walk_order() -> None:
    # Typed as PathQuestion has it: lower case, no brackets, the topic found by its name.
    views = question_views("the mom of kid of kate_west 's children ?", ["Kate_West"])
    assert len(views) == QUESTION_VIEWS
    assert views[SENTENCE_VIEWS:] == ["children", "kid", "the mom"]
    # The other order of the same words gives the other walk.
    views = question_views("the kid of mom of kate_west 's children ?", ["Kate_West"])
    assert views[SENTENCE_VIEWS:] == ["children", "mom", "the kid"]
    views = question_views("what is kate_west 's other half 's father 's religion ?", ["kate_west"])
    assert views[SENTENCE_VIEWS:] == ["other half", "father", "religion"]


def test_walk_mentions_pad_and_cut_to_one_mention_per_step() -> None:
    assert walk_mentions("which movies did the director of", "direct") == [
        "direct",
        "which movies did the director",
        ".",
    ]
    assert walk_mentions("", "'s a 's b 's c 's d ?") == ["a", "b", "c"]
    assert walk_mentions("", "") == ["."] * STEP_MENTIONS


def test_question_views_without_a_topic_mention_read_the_whole_question() -> None:
    views = question_views("who wrote it", ["", "Kevin Falls"])
    assert views == ["who wrote it"] * SENTENCE_VIEWS + ["."] * STEP_MENTIONS


def test_planner_config_bounds_the_aligned_mentions() -> None:
    with pytest.raises(ConfigError, match="step_mentions"):
        PlannerConfig(emb_dim=6, max_steps=2, step_mentions=3)


def test_planner_matches_each_step_with_the_mention_at_its_position() -> None:
    torch.manual_seed(0)
    model = PlanScorer(PlannerConfig(emb_dim=6, hidden=8, max_steps=3, step_mentions=3)).eval()
    views, relations = torch.randn(QUESTION_VIEWS, 6), torch.randn(2, 6)
    steps = torch.tensor([[0, 2], [2, 0]])
    swapped = views.clone()
    swapped[SENTENCE_VIEWS : SENTENCE_VIEWS + 2] = views[[SENTENCE_VIEWS + 1, SENTENCE_VIEWS]]
    # Only the order of the mentions changed, and it changes how the two orders of a plan score.
    assert not torch.allclose(model(views, relations, steps), model(swapped, relations, steps))
    old = PlanScorer(PlannerConfig(emb_dim=6, hidden=8, max_steps=3)).eval()
    assert torch.equal(old(views, relations, steps), old(swapped, relations, steps))


def test_planner_ignores_padding_and_round_trips_through_a_checkpoint() -> None:
    torch.manual_seed(0)
    model = PlanScorer(PlannerConfig(emb_dim=6, hidden=8, max_steps=3)).eval()
    question, relations = torch.randn(3, 6), torch.randn(2, 6)
    steps = torch.tensor([[0, 3], [1, -1]])
    padded = torch.cat([steps, torch.full((2, 1), -1)], dim=1)
    assert torch.allclose(model(question, relations, steps), model(question, relations, padded))
    # The direction of a step matters: the same relations read backwards score differently.
    assert not torch.allclose(model(question, relations, steps), model(question, relations, steps ^ 1))
    again = PlanScorer.from_checkpoint(model.checkpoint(embedder_model_id="m"), embedder_model_id="m")
    assert torch.equal(again(question, relations, steps), model(question, relations, steps))
    with pytest.raises(ConfigError, match="max_steps"):
        PlannerConfig(emb_dim=6, max_steps=0)


def test_rank_plans_is_a_softmax_over_every_plan_and_describes_the_likeliest() -> None:
    torch.manual_seed(0)
    model = PlanScorer(PlannerConfig(emb_dim=4, hidden=8, max_steps=2)).eval()
    # rank_plans reads the relation table's matrix, here the rows of WRITER's two relations, and
    # which entities are named (all of WRITER's)
    tables = (NAMED, SimpleNamespace(matrix=torch.randn(2, 4)))

    def prepared(hops: int) -> PreparedQuestion:
        return PreparedQuestion(
            torch.randn(3, 4), WRITER, torch.arange(5), torch.arange(2), torch.zeros(5, 1), hops
        )

    with torch.inference_mode():
        ranked = rank_plans(model, prepared(3), tables)  # type: ignore[arg-type]
        one_hop = rank_plans(model, prepared(1), tables)  # type: ignore[arg-type]
    assert ranked.plans.num_plans == 3  # the planner reads at most 2 steps, whatever the question's hops
    assert one_hop.plans.steps.tolist() == [[WRITER.relation_types.index("WRITTEN_BY") * 2 + 1]]
    assert torch.isclose(ranked.probabilities.sum(), torch.tensor(1.0))
    described = ranked.describe(WRITER, k=2)
    assert described[0]["probability"] == round(float(ranked.probabilities.max()), 6)
    assert all(step.startswith("<-") or step.endswith("->") for d in described for step in d["steps"])
    assert ranked.reach(WRITER.num_entities)[0].tolist() == [0.0, 0.0]  # a topic is never a plan's end


def _untrained_planner() -> PlanScorer:
    """A planner that learned nothing: every plan alike."""
    model = PlanScorer(PlannerConfig(emb_dim=4, hidden=8, max_steps=2)).eval()
    for parameter in model.parameters():
        torch.nn.init.zeros_(parameter)
    return model


def _writer_question(**inputs: torch.Tensor | WordRuns) -> PreparedQuestion:
    """A 2-hop question about WRITER's e0 with 4-d vectors, plus ``inputs``."""
    return PreparedQuestion(
        torch.randn(3, 4), WRITER, torch.arange(5), torch.arange(2), torch.zeros(5, 1), 2, **inputs
    )  # type: ignore[arg-type]


def test_the_name_prior_weighs_more_beside_a_planner_of_few_labels() -> None:
    from kgqa.retrieval.models.plans import NAME_PRIOR, PRIOR_LABELS, name_prior_for
    from kgqa.retrieval.retriever import checkpoint_name_prior

    weights = [name_prior_for(n) for n in (10, 50, 100, PRIOR_LABELS, 1000)]
    assert weights == sorted(weights, reverse=True) and weights[0] > weights[2] > NAME_PRIOR
    assert weights[3:] == [NAME_PRIOR, NAME_PRIOR]
    assert name_prior_for(None) == name_prior_for(0) == NAME_PRIOR  # unrecorded: the default
    report = {"report": {"examples": {"train": 900, "labelled_train": 50}}}
    assert checkpoint_name_prior(report) == name_prior_for(50)  # the labels, not graph-made questions
    assert checkpoint_name_prior(report, 0.0) == 0.0 and checkpoint_name_prior({}) == NAME_PRIOR


def test_the_name_prior_lifts_the_plan_whose_relations_the_question_names() -> None:
    model = _untrained_planner()
    relations = torch.eye(4)[:2]  # WRITTEN_BY, DIRECTED_BY
    tables = (NAMED, SimpleNamespace(matrix=relations))
    directed = WRITER.relation_types.index("DIRECTED_BY")
    # its one word names DIRECTED_BY
    prepared = _writer_question(run_words=WordRuns(relations[directed].reshape(1, 1, 4)))
    with torch.inference_mode():
        alone = rank_plans(model, prepared, tables)  # type: ignore[arg-type]
        named = rank_plans(model, prepared, tables, name_prior=1.0)  # type: ignore[arg-type]
        unnamed = rank_plans(model, replace(prepared, run_words=None), tables, name_prior=1.0)  # type: ignore[arg-type]
    assert torch.allclose(alone.probabilities, torch.full_like(alone.probabilities, 1 / 3))
    assert torch.equal(unnamed.probabilities, alone.probabilities)
    best = named.plans.steps[int(named.probabilities.argmax())].tolist()
    assert directed * 2 in best  # the walk on to the director
    assert float(named.probabilities.max()) > 1 / 3


def test_the_answers_kind_lifts_the_plan_whose_walk_ends_it_names() -> None:
    model = _untrained_planner()
    entities = torch.eye(5, 4)  # each entity's name its own direction; e4 has none (a nameless node)
    entities[4] = 0
    named = torch.tensor([True, True, True, True, False])
    tables = (SimpleNamespace(matrix=entities, has_text=named), SimpleNamespace(matrix=torch.eye(4)[:2]))
    prepared = _writer_question(answer_noun=entities[2])  # "which director ...": the noun is e2's kind
    with torch.inference_mode():
        alone = rank_plans(model, prepared, tables)  # type: ignore[arg-type]
        kinded = rank_plans(model, prepared, tables, answer_type=1.0)  # type: ignore[arg-type]
        no_noun = rank_plans(model, replace(prepared, answer_noun=None), tables, answer_type=1.0)  # type: ignore[arg-type]
    assert torch.allclose(alone.probabilities, torch.full_like(alone.probabilities, 1 / 3))
    assert torch.equal(no_noun.probabilities, alone.probabilities)
    assert _names(kinded.plans, WRITER)[int(kinded.probabilities.argmax())] == ("<-WRITTEN_BY", "DIRECTED_BY")
