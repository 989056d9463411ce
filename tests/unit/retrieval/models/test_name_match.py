"""The train-free planner: content words, word matches, and the best distinct assignment."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import torch
from subgraphs import make_subgraph

from kgqa.retrieval.features import PreparedQuestion, WordRuns
from kgqa.retrieval.models.name_match import (
    BOUND_CUE,
    COST_PER_DOUBLING,
    FEW_RELATIONS,
    FREE_CUE,
    NO_CUE,
    STEP_COST,
    NameMatchPlanner,
    best_assignment,
    compound_head,
    content_words,
    plan_fit,
    question_runs,
    relation_name_words,
    relation_phrases,
    step_cost,
    steps_through_mediators,
    word_matches,
)


def _brute_force(
    matches: torch.Tensor, steps: torch.Tensor, cost: float, through: torch.Tensor | None = None
) -> torch.Tensor:
    out = []
    for p, row in enumerate(steps.tolist()):
        present = [s for s in row if s >= 0]
        relations = [s // 2 for s in present]
        into = [bool(through[p, i]) if through is not None else False for i in range(len(present))]
        words = list(range(matches.shape[1])) + [None] * len(relations)  # None: no word, match 0
        ends_back = len(present) > 1 and present[-1] == present[-2] ^ 1
        best = float("-inf")
        for choice in itertools.permutations(range(len(words)), len(relations)):
            if ends_back and words[choice[-1]] is not None:
                continue  # a walk back that ends the plan takes no word
            total = 0.0
            for i, (r, w) in enumerate(zip(relations, choice, strict=True)):
                if words[w] is None:
                    total += 0.0 if into[i] else -cost  # a step into a mediator is free without a word
                    continue
                match = float(matches[r, words[w]])
                if i and into[i - 1]:  # out of a mediator: a word for either relation
                    match = max(match, float(matches[relations[i - 1], words[w]]))
                total += match - cost
            best = max(best, total)
        out.append(best)
    return torch.tensor(out)


@pytest.mark.parametrize("num_words", [0, 1, 2, 5])
@pytest.mark.parametrize("mediators", [False, True])
def test_best_assignment_equals_brute_force_over_distinct_words(num_words: int, mediators: bool) -> None:
    generator = torch.Generator().manual_seed(num_words)
    matches = torch.rand(4, num_words, generator=generator) - 0.3
    steps = torch.randint(0, 8, (40, 3), generator=generator)
    steps[:10, 1:] = -1
    steps[10:20, 2] = -1
    through = None
    if mediators:
        mediator_steps = torch.tensor([True, False, False, True, False, True, False, False])
        through = steps_through_mediators(mediator_steps, steps)
        assert bool(through.any()) and not bool(through[:10].any())  # a 1-step plan walks on out of none
    torch.testing.assert_close(
        best_assignment(matches, steps, 0.25, through=through), _brute_force(matches, steps, 0.25, through)
    )


def test_a_step_into_a_mediator_and_out_named_by_one_word_cost_one_step() -> None:
    # "who played Roxanne in Ghost Rider": "played" (the one word) matches relation 2 (actor of a
    # film performance) best, relation 0 (a film's starring: film -> performance) a little.
    # Relation 1 (producer) is one step to a person.
    matches = torch.tensor([[0.2], [0.45], [0.6]])
    plans = torch.tensor([[0, 4], [2, -1]])  # starring then actor; producer
    mediators = torch.tensor([True, False, False, False, False, False])  # starring -> a performance
    through = steps_through_mediators(mediators, plans)
    assert through.tolist() == [[True, False], [False, False]]
    pair, producer = best_assignment(matches, plans, 0.25, through=through).tolist()
    assert pair == pytest.approx(0.35) and producer == pytest.approx(0.2)
    # Read as two steps, the pair paid a second cost and lost to the producer.
    pair, producer = best_assignment(matches, plans, 0.25).tolist()
    assert pair == pytest.approx(0.1) and pair < producer
    # Named by a word for the step in only ("starring"), the pair still pays one cost.
    starring = torch.tensor([[0.6], [0.0], [0.0]])
    assert float(best_assignment(starring, plans[:1], 0.25, through=through[:1])) == pytest.approx(0.35)


def test_a_step_pays_for_itself_only_with_a_word_of_its_own() -> None:
    # One word, "directed", matching relation 0: the 1-step plan beats the plan that walks
    # relation 0 there and back, whose second step finds no word left.
    matches = torch.tensor([[0.6], [0.0]])
    one, two = best_assignment(matches, torch.tensor([[0, -1], [0, 1]]), 0.25).tolist()
    assert one == pytest.approx(0.35) and two == pytest.approx(0.1) and one > two


def test_a_walk_back_that_ends_the_plan_takes_no_word() -> None:
    # "films written by X released in which years": "released" and "years" both match relation 1
    # (release year); walking it there and back would let the second word pay for a third step.
    matches = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.5, 0.4]])
    two, three = best_assignment(matches, torch.tensor([[1, 2, -1], [1, 2, 3]]), 0.25).tolist()
    assert two == pytest.approx(0.5) and three == pytest.approx(0.25)
    # Inside a plan a walk back may take its word: "movies written by the writer of X".
    inside = best_assignment(matches, torch.tensor([[2, 3, 0]]), 0.25)
    assert float(inside) == pytest.approx(0.65)


def test_word_matches_are_centred_per_word_over_the_relations() -> None:
    relations = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    words = torch.tensor([[[1.0, 1.0]], [[1.0, 0.0]]])  # a word equally near both, then one near the first
    matches = word_matches(relations, words)
    torch.testing.assert_close(matches[:, 0], torch.zeros(2))
    assert matches[0, 1] > 0 > matches[1, 1]


def test_content_words_drop_the_topic_and_function_words_but_keep_when_and_where() -> None:
    assert content_words("who directed Cast Away", ["Cast Away"]) == ["directed"]
    assert content_words("when was cast away released", ["Cast Away"]) == ["when", "released"]
    assert content_words("where is the club that Alan_PULIDO plays for ?", ["Alan PULIDO"]) == [
        "where",
        "club",
        "plays",
    ]


def test_a_run_of_words_matches_as_its_best_word_per_relation_and_names_one_step() -> None:
    relations = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # One run of two words ("release years"): each near one relation; zero padding matches 0.
    run = torch.tensor([[[1.0, 0.0], [0.9, 0.1]], [[0.0, 1.0], [0.0, 0.0]]])
    matches = word_matches(relations, run)
    assert matches.shape == (2, 2)
    alone = [word_matches(relations, run[:1, k : k + 1]).squeeze(1) for k in range(2)]
    torch.testing.assert_close(matches[:, 0], torch.maximum(*alone))
    # A plan walking relation 0 there and back has one unit for two steps: the second pays its cost.
    one, two = best_assignment(matches[:, :1], torch.tensor([[0, -1], [0, 1]]), 0.25).tolist()
    assert one > two


def test_content_words_join_adjacent_words_into_one_run() -> None:
    question = "what were the release years of films Tom Hanks acted in"
    assert content_words(question, ["Tom Hanks"]) == ["release years", "films", "acted"]


def test_content_words_leave_out_the_kind_an_article_gives_a_topic() -> None:
    # "the film X" says what X is; "films" in "the release years of films X acted in" may name a
    # walk, and so may a word after the mention.
    assert content_words("the film Cast Away starred which actors", ["Cast Away"]) == ["starred", "actors"]
    assert content_words("who is the player Pele", ["Pele"]) == []
    assert content_words("the Cast Away director", ["Cast Away"]) == ["director"]


def test_content_words_leave_out_every_topic_mention() -> None:
    question = "who plays at position Forward for country Germany"
    assert content_words(question, ["Germany", "Forward"]) == ["plays", "position", "country"]


def test_a_sharing_cue_pays_for_the_walk_back() -> None:
    # "films with the same director as X": one run ("same director") matching relation 0. The walk
    # there and back (0 then its reverse, 1) beats the walk there alone only with the cue.
    matches = torch.tensor([[0.6], [0.0]])
    steps = torch.tensor([[0, -1], [0, 1]])
    there, back = best_assignment(matches, steps, 0.25).tolist()
    assert there > back
    there, back = best_assignment(matches, steps, 0.25, torch.tensor([BOUND_CUE])).tolist()
    assert back > there
    # There, back and there again earns no second bonus.
    three = best_assignment(matches, torch.tensor([[0, 1, 0]]), 0.25, torch.tensor([BOUND_CUE]))
    assert float(three) < back


def test_a_cue_word_may_name_the_walk_back_that_ends_the_plan() -> None:
    # "the director of X also directed which films": "director" (run 0) and "also directed" (run 1,
    # a cue) both match relation 0. Without the cue a walk back that ends the plan takes no word.
    matches = torch.tensor([[0.4, 0.4], [0.0, 0.0]])
    there_and_back = torch.tensor([[0, 1]])
    assert float(best_assignment(matches, there_and_back, 0.25)) == pytest.approx(-0.1)
    cued = torch.tensor([NO_CUE, BOUND_CUE])
    assert float(best_assignment(matches, there_and_back, 0.25, cued)) == pytest.approx(0.3)
    again = torch.tensor([[0, 1, 0]])  # not the walk back after a walk back
    assert float(best_assignment(matches, again, 0.25, cued)) < 0.3


def test_a_bound_cue_pays_only_for_walking_back_its_own_relation() -> None:
    # "who wrote movies that share directors with X": "wrote" (run 0) matches relation 0, "share
    # directors" (run 1, bound) relation 1. Walking relation 0 there and back earns nothing; a
    # free cue ("also", run 2) would pay for it.
    matches = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.2, 0.0]])
    wrote_back = torch.tensor([[0, 1]])
    bound = torch.tensor([NO_CUE, BOUND_CUE, NO_CUE])
    assert float(best_assignment(matches, wrote_back, 0.25, bound)) == pytest.approx(0.0)
    free = torch.tensor([NO_CUE, BOUND_CUE, FREE_CUE])
    assert float(best_assignment(matches, wrote_back, 0.25, free)) == pytest.approx(0.3)
    directors_back_wrote = torch.tensor([[2, 3, 0]])
    assert float(best_assignment(matches, directors_back_wrote, 0.25, bound)) == pytest.approx(0.25)


def test_sharing_cues_tell_a_cue_alone_from_one_bound_to_other_words() -> None:
    cues = NameMatchPlanner.sharing_cues(
        question_runs("which films have the same director as Jaws", ["Jaws"]).words
    )
    assert cues.tolist() == [BOUND_CUE, NO_CUE]  # "same director", "films"
    cues = NameMatchPlanner.sharing_cues(question_runs("who co-starred with Tom Hanks", ["Tom Hanks"]).words)
    assert cues.tolist() == [FREE_CUE]
    cues = NameMatchPlanner.sharing_cues(
        question_runs("the director of Jaws is also the director of", ["Jaws"]).words
    )
    assert cues.tolist() == [NO_CUE, FREE_CUE]  # "director" (once), "also"
    cues = NameMatchPlanner.sharing_cues(question_runs("who acted alongside Tom Hanks", ["Tom Hanks"]).words)
    assert cues.tolist() == [BOUND_CUE]  # "acted alongside": a walk back after the acting


@pytest.mark.parametrize(
    ("question", "runs", "shares"),
    [
        ("movies directed by the director of Jaws", [["director"], ["movies", "directed"]], [False, True]),
        ("which films were written by the writer of Jaws", [["writer"], ["films", "written"]], [False, True]),
        # the films are not the answer: asked on from them
        (
            "what types are the films directed by the director of Jaws",
            [["director"], ["films", "directed"], ["types"]],
            [False, False, False],
        ),
        (
            "who acted in films directed by the director of Jaws",
            [["director"], ["films", "directed"], ["acted"]],
            [False, False, False],
        ),
        ("films directed by Steven Spielberg", [["films", "directed"]], [False]),  # no "the N of": no sharing
        # no participle: the chain's noun, not "films", names the relation they share
        ("films by the writer of Jaws", [["writer"], ["films"]], [False, FREE_CUE]),
        ("who acted with Steven Spielberg", [["acted"]], [True]),  # his co-stars
        # "which N" + an auxiliary before "V with": the noun and the verb are one run, the co-stars
        ("which actors have worked with Steven Spielberg", [["actors", "worked"]], [True]),
        ("which films can be described with Jaws", [["described"], ["films"]], [False, False]),
        (
            "what films did the director of Jaws make",
            [["make"], ["director"], ["films"]],
            [FREE_CUE, False, False],  # whatever the verb: the director's films
        ),
    ],
)
def test_a_participle_with_the_topics_noun_as_agent_or_who_v_with_says_the_answers_share(
    question: str, runs: list[list[str]], shares: list[bool | int]
) -> None:
    mention = "Steven Spielberg" if "Spielberg" in question else "Jaws"
    assert question_runs(question, [mention]).words == runs
    kinds = [BOUND_CUE if shared is True else NO_CUE if shared is False else shared for shared in shares]
    assert question_runs(question, [mention]).shares == kinds
    assert NameMatchPlanner.sharing_cues(runs, kinds).tolist() == kinds


@pytest.mark.parametrize(
    ("question", "mention", "chained"),
    [
        (
            "who acted in the films directed by Tinto Brass",
            "Tinto Brass",
            [True, True],
        ),  # films directed, acted
        ("what types are the films written by Dick Wolf", "Dick Wolf", [True, True]),
        ("movies directed by Steven Spielberg", "Steven Spielberg", [False]),  # one step: no chain
        ("which films were directed by Steven Spielberg", "Steven Spielberg", [False, False]),  # no article
        ("the release dates of Common starred movies", "Common", [True, True]),  # Common's starred movies
        ("where did the wife of Common die", "Common", [False, True, True]),  # "die": a verb, not "V-ed N"
        ("what is the capital of Common wiki answers", "Common", [False, False]),
    ],
)
def test_a_run_asking_on_from_the_n_v_ed_by_the_topic_chains_with_it(
    question: str, mention: str, chained: list[bool]
) -> None:
    assert question_runs(question, [mention]).chained == chained


def test_a_run_said_again_inside_a_longer_one_is_that_one() -> None:
    # "date" asks for what "release date" names: one step, not a walk there and back
    runs = question_runs("which date was the release date of the Wilson film", ["Wilson"])
    assert runs.words == [["film"], ["release", "date"]]
    assert runs.chained == [False, False]
    assert question_runs("what year was albert pujols rookie year", ["albert pujols"]).words == [
        ["rookie", "year"]
    ]


def test_the_noun_of_what_kind_of_n_is_x_is_marked() -> None:
    kind = question_runs("what kind of film is Jaws", ["Jaws"])
    assert (kind.words, kind.kinds) == ([["film"], ["kind"]], [True, False])
    religion = question_runs("what type of religion is sarah 's couple ?", ["sarah"])
    assert (religion.words, religion.kinds) == ([["couple"], ["religion"], ["type"]], [False, True, False])
    # not a noun right before the copula and the mention, or no "of" before it
    assert question_runs("what is the genre of Jaws", ["Jaws"]).kinds == [False]
    assert question_runs("what language is Jaws in", ["Jaws"]).kinds == [False]


def test_share_and_an_article_give_the_cue_to_the_word_after_them() -> None:
    # "movies share" would bind the cue to what "movies" names; the director is what is shared
    runs = question_runs("which movies share a director with Jaws", ["Jaws"])
    assert (runs.words, runs.shares) == ([["director"], ["movies"]], [BOUND_CUE, NO_CUE])
    # "share directors" is one run already, and bound by its own sharing word
    runs = question_runs("movies that share directors with Jaws", ["Jaws"])
    assert (runs.words, runs.shares) == ([["share", "directors"], ["movies"]], [NO_CUE, NO_CUE])


def test_the_noun_of_what_n_did_the_m_of_x_v_is_marked() -> None:
    # "films" names the answers (the director's films), not a third step from them
    runs = question_runs("what films did the director of Jaws also direct", ["Jaws"])
    assert (runs.words, runs.kinds) == ([["also", "direct"], ["director"], ["films"]], [False, False, True])
    # a "what N" with no "the M of" before the mention is not
    assert question_runs("what films did Jaws star in", ["Jaws"]).kinds == [False, False]


def test_the_noun_of_a_which_that_ends_the_question_is_marked() -> None:
    # "which movies" after the verb names the answers' class, not a third step
    runs = question_runs("the director of Jaws also directed which movies", ["Jaws"])
    assert runs.words == [["also", "directed"], ["director"], ["movies"]]
    assert runs.kinds == [False, False, True]
    # "years" is marked too: it still names release year, where it matches beyond the step cost
    released = question_runs("the films of Jaws were released in which years", ["Jaws"])
    assert released.kinds == [False, False, True]
    # not a "which" that starts the question, nor one with words after its noun
    assert question_runs("which movies did Jaws star", ["Jaws"]).kinds == [False, False]
    assert question_runs("Jaws was made in which year by its studio", ["Jaws"]).kinds == [False, False, False]


def test_a_compound_word_reads_its_head_where_a_relation_word_begins_so() -> None:
    names = ["written_by", "directed_by", "starred_actors", "education.institution.school_type"]
    words = relation_name_words(names)
    assert words == {"written", "directed", "starred", "actors", "institution", "school", "type"}
    known = {
        "screen",
        "writer",
        "high",
        "school",
        "university",
        "uni",
        "direct",
        "director",
        "star",
        "starred",
    }
    assert compound_head("screenwriter", words, known) == "writer"
    assert compound_head("highschool", words, known) == "school"
    # a part that is no known word ("versity"), no ending a relation word begins, a prefixed word
    assert compound_head("university", words | {"version"}, known) is None
    assert compound_head("director", words, known) is None
    assert compound_head("co-starred", words, known | {"co"}) is None
    assert compound_head("screenwriter", words, ()) is None  # no vocabulary, no compounds
    runs = question_runs("which films have the same screenwriter as Jaws", ["Jaws"], (), words, known)
    assert runs.words == [["same", "writer"], ["films"]]


def test_word_runs_come_outward_from_the_topic() -> None:
    assert question_runs("the nation of frederica 's couple ?", ["frederica"]).words == [
        ["couple"],
        ["nation"],
    ]
    question = "who directed the movies written by the writer of Jaws"
    assert question_runs(question, ["Jaws"]).words == [["writer"], ["movies", "written"], ["directed"]]


def test_a_plan_naming_its_words_outward_from_the_topic_wins_a_tie() -> None:
    # Words 0 ("writer") and 1 ("directed") in outward order, matching relations 0 and 1 alike.
    matches = torch.tensor([[0.5, 0.0], [0.0, 0.5]])
    outward, inward = torch.tensor([[0, 2]]), torch.tensor([[2, 0]])
    assert best_assignment(matches, outward, 0.25) == best_assignment(matches, inward, 0.25)
    ordered = [float(best_assignment(matches, plan, 0.25, ordered=True)) for plan in (outward, inward)]
    assert ordered[0] == pytest.approx(0.55) and ordered[1] == pytest.approx(0.5)


def test_plan_fit_is_the_questions_cosine_with_the_plans_names_together() -> None:
    # Relations 0 ("parents") and 1 ("gender") are orthogonal; a question about both sits nearer
    # the 2-step plan than either 1-step plan, and the direction of a step does not matter.
    relation_emb = torch.eye(3)
    question = torch.tensor([1.0, 1.0, 0.0])
    steps = torch.tensor([[0, -1], [0, 2], [2, -1], [1, 2], [4, -1]])
    fits = plan_fit(question, relation_emb, steps)
    torch.testing.assert_close(fits, torch.tensor([0.5**0.5, 1.0, 0.5**0.5, 1.0, 0.0]))


def _chains(question: str, mention: str) -> list[tuple[str, bool]]:
    runs = question_runs(question, [mention])
    return list(zip([" ".join(run) for run in runs.words], runs.chained, strict=True))


def test_nouns_chained_to_the_topic_by_of_and_s_are_marked_from_two_on() -> None:
    assert _chains("the nation of Claudius 's parent ?", "Claudius") == [("parent", True), ("nation", True)]
    # Typed together as people do: the possessive still ends a run.
    assert _chains("Claudius's parent's sex", "Claudius") == [("parent", True), ("sex", True)]
    assert _chains("what sex is Claudius 's dad", "Claudius") == [("dad", True), ("sex", True)]
    # "where" asks for a place as "the place of" would: "offspring die" is the next step's word.
    assert _chains("where did Claudius 's son die", "Claudius") == [("son die", True), ("where", True)]
    assert _chains("where was Claudius born", "Claudius") == [("born", False), ("where", False)]
    # A verb right before the chain names the step after it: the films' directors.
    assert _chains("who directed Claudius's films", "Claudius") == [("directed", True), ("films", True)]
    runs = _chains("which films share the same director of Claudius", "Claudius")
    assert runs == [("same director", False), ("films", False)]
    # One noun says no more than its match does; a verb is no link of the chain.
    assert _chains("the director of Claudius also directed which films", "Claudius") == [
        ("also directed", False),
        ("director", False),
        ("films", False),
    ]
    runs = _chains("what films did Claudius 's wife star in", "Claudius")
    assert runs == [("wife star", False), ("films", False)]


def test_a_chain_keeps_a_word_said_twice_and_skips_its_frame() -> None:
    assert _chains("Claudius 's daughter 's daughter", "Claudius") == [("daughter", True), ("daughter", True)]
    assert _chains("what is the name of the wife of Claudius 's darling", "Claudius") == [
        ("darling", True),
        ("wife", True),
        ("name", False),
    ]
    # Said again outside the chain, the chain's word is one run ("director" paid for one step).
    assert _chains("the director of Claudius is also the director of which films", "Claudius") == [
        ("director", False),
        ("also", False),
        ("films", False),
    ]


def test_a_relation_named_a_of_b_is_one_word_of_the_question() -> None:
    phrases = relation_phrases(["PLACE_OF_BIRTH", "people.deceased_person.cause_of_death", "directed_by"])
    assert phrases == {"place of birth", "cause of death"}
    question = "what is the place of birth of the mom of Claudius"
    assert question_runs(question, ["Claudius"], phrases).words == [["mom"], ["place of birth"]]
    assert question_runs(question, ["Claudius"], phrases).chained == [True, True]
    # Without the graph's phrases "place" and "birth" are two nouns of the chain, three steps.
    assert question_runs(question, ["Claudius"]).words == [["mom"], ["birth"], ["place"]]


def test_word_vectors_encode_each_word_alone_once_whatever_question_it_comes_in() -> None:
    from kgqa.config import EmbedderSettings
    from kgqa.embed import make_embedder
    from kgqa.retrieval.models.name_match import WordVectors

    embedder = make_embedder(EmbedderSettings())  # the bundled encoder: a padded batch moves vectors
    words = WordVectors(embedder)
    first = words([["directed"], ["release", "year"]])
    assert first.shape == (2, 2, embedder.dimension)
    assert torch.equal(first[0, 1], torch.zeros(embedder.dimension))  # padding
    for vector, word in ((first[0, 0], "directed"), (first[1, 0], "release"), (first[1, 1], "year")):
        assert torch.equal(vector, embedder.embed([word])[0])
    # The same word beside other words is the same vector: answers do not depend on the order
    # questions come in, and a word already seen is not encoded again.
    calls = []
    original = embedder.embed
    embedder.embed = lambda texts: calls.append(list(texts)) or original(texts)  # type: ignore[method-assign]
    again = words([["the", "director", "directed"]])
    assert torch.equal(again[0, 2], first[0, 0])
    assert ["directed"] not in calls and len(calls) == 2


def test_where_and_when_asking_of_a_clause_about_the_topic_are_marked() -> None:
    runs = question_runs("where did Hitler die", ["Hitler"])
    assert (runs.words, runs.asks) == ([["die"], ["where"]], [False, True])
    assert question_runs("when was Jaws released", ["Jaws"]).asks == [False, True]
    assert question_runs("where is the Seychelles located", ["Seychelles"]).asks == [False, True]
    assert question_runs("what did Hitler die of", ["Hitler"]).asks == [False]
    # where the club is, a step on from it; and a possessive chain, whose nouns and verb are one run
    assert not any(question_runs("where is the football club that Xabi plays for", ["Xabi"]).asks)
    assert not any(question_runs("where did Claudius 's son die", ["Claudius"]).asks)


def test_where_says_what_the_last_step_reaches_and_pays_for_no_step_of_its_own() -> None:
    # Relations 0 PLACE_OF_DEATH, 1 CONTAINEDBY, 2 CAUSE_OF_DEATH. "die" names the place and the
    # cause of death alike; "where" matches containedby better than the place of death, by less
    # than a step's cost.
    relation_emb = torch.eye(3)
    die, where = torch.tensor([1.0, 0.0, 1.0]), torch.tensor([0.8, 1.0, 0.0])
    vectors = torch.stack([die, where]).unsqueeze(1)
    steps = torch.tensor([[0, -1], [0, 2], [4, -1]])  # the place; the place's place; the cause
    sub = make_subgraph(2, [(0, 1)])
    rows = (torch.arange(2), torch.arange(3))
    question = PreparedQuestion(torch.zeros(1, 3), sub, *rows, torch.zeros(2, 1), 2)

    def best(runs: WordRuns) -> list[int]:
        logits = NameMatchPlanner().plan_logits(replace(question, run_words=runs), relation_emb, steps)
        return steps[int(logits.argmax())].tolist()

    # as a word of its own, "where" pays for a step on to the place's place
    assert best(WordRuns(vectors)) == [0, 2]
    # read on the last step, it tells the place of death from the cause
    assert best(WordRuns(vectors, asks=torch.tensor([False, True]))) == [0, -1]


def test_where_takes_no_step_beyond_the_one_another_word_names() -> None:
    # Relations 0 PLACE_OF_BIRTH, 1 CONTAINEDBY, 2 PROFESSION. "born" names the place of birth;
    # "where" matches containedby better by more than a step's cost ("where was elvis costello
    # born": Paddington, not London around it).
    relation_emb = torch.eye(3)
    born, where = torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.5, 1.0, 0.0])
    steps = torch.tensor([[0, -1], [0, 2], [2, -1]])  # the place; the place's place; containedby
    sub = make_subgraph(2, [(0, 1)])
    rows = (torch.arange(2), torch.arange(3))
    question = PreparedQuestion(torch.zeros(1, 3), sub, *rows, torch.zeros(2, 1), 2)

    def best(*vectors: torch.Tensor) -> list[int]:
        asks = torch.tensor([False] * (len(vectors) - 1) + [True])
        runs = WordRuns(torch.stack(vectors).unsqueeze(1), asks=asks)
        logits = NameMatchPlanner().plan_logits(replace(question, run_words=runs), relation_emb, steps)
        return steps[int(logits.argmax())].tolist()

    assert best(born, where) == [0, -1]
    # where no other word names a step ("where is X"), "where" names one itself
    assert best(where) == [2, -1]


def test_a_step_costs_more_on_a_subgraph_of_many_relation_types() -> None:
    assert step_cost(3) == step_cost(FEW_RELATIONS) == STEP_COST
    assert step_cost(4 * FEW_RELATIONS) == pytest.approx(STEP_COST + 2 * COST_PER_DOUBLING)
    # "born" names relation 0; a second word leans to relation 1 as one word in hundreds of
    # Freebase relations does to some relation by chance: enough to pay for a step among 8
    # relation types, not among 128 (two topics: no bonus for the words' order).

    def best(num_relations: int, relation_count: int | None = None) -> list[int]:
        sub = make_subgraph(
            2, [(0, 1)] * num_relations, rels=[f"r{i:03d}" for i in range(num_relations)], num_topics=2
        )
        born, leaning = torch.zeros(num_relations), torch.zeros(num_relations)
        born[0] = 1.0
        leaning[1], leaning[-1] = 0.45, 0.89
        runs = WordRuns(torch.stack([born, leaning]).unsqueeze(1), relation_count=relation_count)
        rows = (torch.arange(2), torch.arange(num_relations))
        question = PreparedQuestion(
            torch.zeros(1, num_relations), sub, *rows, torch.zeros(2, 1), 2, run_words=runs
        )
        steps = torch.tensor([[0, -1], [0, 2]])  # the place; on one more step
        logits = NameMatchPlanner().plan_logits(question, torch.eye(num_relations), steps)
        return steps[int(logits.argmax())].tolist()

    assert best(8) == [0, 2]
    assert best(128) == [0, -1]
    # a topic contender's subgraph is read at the cost of the question's largest contender's
    assert best(8, relation_count=128) == [0, -1]
