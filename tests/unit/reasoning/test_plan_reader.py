"""The train-free path on the toy KG: plans by relation names, answers at the best plan's ends."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
from conftest import FakeEmbedder
from subgraphs import make_subgraph, sure_of

from kgqa.reasoning.constraints import constraint_counts, neighbours_named
from kgqa.reasoning.plan_ends import (
    confident_plan_ends,
    ends_of_kin_plans,
    ends_of_mediated_twins,
    ends_tied_to_every_topic,
    parts_beside_last_step,
)
from kgqa.reasoning.plan_reader import PlanReader, answerable, question_fit
from kgqa.retrieval.models.name_match import SHARPNESS, STEP_COST, NameMatchPlanner, steps_through_mediators
from kgqa.retrieval.models.plans import RankedPlans, enumerate_plans
from kgqa.retrieval.retriever import Retrieval, Retriever
from kgqa.store.kglite_store import KgliteStore
from kgqa.types import TripleRecord


def test_train_free_answers_are_every_end_of_the_best_plan(
    toy_kg: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    retriever = Retriever.train_free(toy_kg, fake_embedder)
    assert not retriever.trained
    retrieval = retriever.retrieve("which films starred [Tom Hanks]")
    assert retrieval.plans is not None
    best = retrieval.plans.describe(retrieval.prepared.subgraph, 1)[0]
    assert best["steps"] == ["<-STARRED_ACTORS"]  # one word for one step: no longer walk
    answers = PlanReader().extract_answers(retrieval)
    assert {a.name for a in answers} == {"Forrest Gump", "Cast Away", "The Terminal"}
    assert all(a.support for a in answers)


def test_train_free_answers_ignore_the_evidence_cap(toy_kg: KgliteStore, fake_embedder: FakeEmbedder) -> None:
    retrieval = Retriever.train_free(toy_kg, fake_embedder).retrieve("which films starred [Tom Hanks]")
    nothing_shown = torch.zeros(retrieval.prepared.subgraph.num_entities, dtype=torch.bool)
    answers = PlanReader().extract_answers(retrieval, candidates=nothing_shown)
    assert len(answers) == 3


def test_train_free_answers_of_two_topics_touch_both(
    toy_kg: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    question = "which films starred [Tom Hanks] directed by [Robert Zemeckis]"
    retrieval = Retriever.train_free(toy_kg, fake_embedder).retrieve(question)
    answers = PlanReader().extract_answers(retrieval)
    assert {a.name for a in answers} == {"Forrest Gump", "Cast Away"}  # not The Terminal (Spielberg)


def test_answers_of_two_topics_of_one_kind_are_tied_to_both(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # The plan walks from both actors: each actor's own films are tied to that actor by the walk,
    # and only the film walked from one actor and tied to the other stars both.
    triples = [
        ("Sleepless in Seattle", "starred_actors", "Tom Hanks"),
        ("Sleepless in Seattle", "starred_actors", "Meg Ryan"),
        ("Cast Away", "starred_actors", "Tom Hanks"),
        ("When Harry Met Sally", "starred_actors", "Meg Ryan"),
    ]
    question = "which films starred [Tom Hanks] and [Meg Ryan]"
    retrieval = _train_free_retrieval(kglite_store, fake_embedder, triples, question)
    assert retrieval.plans is not None
    assert retrieval.plans.describe(retrieval.prepared.subgraph, 1)[0]["steps"] == ["<-STARRED_ACTORS"]
    assert [a.name for a in PlanReader().extract_answers(retrieval)] == ["Sleepless in Seattle"]


def test_an_end_tied_to_the_other_topic_through_a_nameless_fact_answers_both(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Freebase ties an actor to the character played only through the performance node.
    triples = [
        ("The Hunger Games", "film.film.starring", "m.0gwlg3"),
        ("m.0gwlg3", "film.performance.actor", "Stanley Tucci"),
        ("m.0gwlg3", "film.performance.character", "Caesar Flickerman"),
        ("The Hunger Games", "film.film.starring", "m.0gwlfq"),
        ("m.0gwlfq", "film.performance.actor", "Jennifer Lawrence"),
        ("m.0gwlfq", "film.performance.character", "Katniss Everdeen"),
    ]
    question = "who played [Caesar Flickerman] in [The Hunger Games]"
    retrieval = _train_free_retrieval(kglite_store, fake_embedder, triples, question)
    sub = retrieval.prepared.subgraph
    tied = ends_tied_to_every_topic(retrieval)
    assert tied is not None
    tied_names = {sub.entity_ids[i] for i in tied.nonzero().flatten().tolist()}
    assert "Stanley Tucci" in tied_names
    assert not tied_names & {"Jennifer Lawrence", "Katniss Everdeen"}
    assert [a.name for a in PlanReader().extract_answers(retrieval)] == ["Stanley Tucci"]


def test_the_answer_set_comes_nearest_name_to_the_question_first(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    triples = [
        ("China", "location.country.languages_spoken", "Amdo Tibetan"),
        ("China", "location.country.languages_spoken", "Bai"),
        ("China", "location.country.languages_spoken", "Chinese"),
    ]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    retrieval = retriever.retrieve("which chinese language does [China] speak")
    unordered = PlanReader().extract_answers(retrieval)
    local = retrieval.prepared.subgraph.local_ids()
    assert [local[a.id] for a in unordered] == sorted(local[a.id] for a in unordered)  # the subgraph's order
    assert unordered[0].name != "Chinese"
    entities = retriever.tables[0]
    ordered = PlanReader(entities).extract_answers(retrieval)
    assert ordered[0].name == "Chinese"  # shares "chinese" with the question
    assert {a.name for a in ordered} == {a.name for a in unordered}
    fit = question_fit(retrieval, entities)
    local = retrieval.prepared.subgraph.local_ids()
    fits = [float(fit[local[a.id]]) for a in ordered]
    assert fits == sorted(fits, reverse=True)


def test_the_noun_the_question_names_its_answers_by_weighs_in_their_order() -> None:
    # "what college did X attend as a school boy": the whole question sits nearer the school's
    # name, the noun "college" nearer the college's
    school, college = [1.0, 0.0, 0.0], [0.6, 0.8, 0.0]
    entities = SimpleNamespace(matrix=torch.tensor([school, college]))
    prepared = SimpleNamespace(
        entity_rows=torch.tensor([0, 1]), question_emb=torch.tensor([1.0, 0.0, 0.0]), answer_noun=None
    )
    retrieval = SimpleNamespace(prepared=prepared)
    assert question_fit(retrieval, entities).tolist() == pytest.approx([1.0, 0.6])  # type: ignore[arg-type]
    prepared.answer_noun = torch.tensor([0.0, 2.0, 0.0])  # any length: cosines
    assert question_fit(retrieval, entities).tolist() == pytest.approx([1.0, 1.4])  # type: ignore[arg-type]


def test_a_surname_tag_answers_as_the_man_it_names_where_his_relations_fit(
    toy_kg: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    from ingest.embedding import embed_store
    from ingest.loader import load

    tag = TripleRecord("Jaws", "has_tags", "spielberg", line=1)
    load(toy_kg, [tag], source="t", fmt="test", source_key="t")
    embed_store(toy_kg, fake_embedder)
    retrieval = Retriever.train_free(toy_kg, fake_embedder).retrieve("which films were directed by spielberg")
    assert [t.id for t in retrieval.topics] == ["Steven Spielberg"]  # not the tag on Jaws alone
    answers = PlanReader().extract_answers(retrieval)
    assert {a.name for a in answers} == {"Jaws", "The Terminal"}


def test_answers_never_stop_at_a_nameless_node(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    triples = [
        ("Barack Obama", "people.person.education", "m.02nqgpk"),  # a CVT node: named by its mid only
        ("m.02nqgpk", "education.education.institution", "Harvard Law School"),
        ("Barack Obama", "people.person.place_of_birth", "Honolulu"),
    ]
    question = "what education did [Barack Obama] have"
    retrieval = _train_free_retrieval(kglite_store, fake_embedder, triples, question)
    sub = retrieval.prepared.subgraph
    cvt = sub.entity_ids.index("m.02nqgpk")
    assert retrieval.plans is not None and float(retrieval.plans.reach(sub.num_entities)[cvt, 0]) > 0
    assert not bool(retrieval.answerable()[cvt]) and bool(
        retrieval.answerable()[sub.entity_ids.index("Honolulu")]
    )
    assert float(PlanReader().entity_probabilities(retrieval)[cvt]) == 0.0
    assert "m.02nqgpk" not in {a.id for a in PlanReader().extract_answers(retrieval)}
    assert retrieval.names["m.02nqgpk"].startswith("m.02nqgpk [")  # named by its neighbours
    assert "Harvard Law School" in retrieval.names["m.02nqgpk"]


def test_a_step_into_a_nameless_mediator_costs_nothing_and_the_walk_goes_on_through_it(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Freebase's "X starred in Y as Z": Y -starring-> a performance named by its mid -actor-> X.
    triples = [
        ("Ghost Rider", "film.film.starring", "m.0k3nk1"),
        ("m.0k3nk1", "film.performance.actor", "Eva Mendes"),
        ("m.0k3nk1", "film.performance.character", "Roxanne Simpson"),
        ("Ghost Rider", "film.film.produced_by", "Avi Arad"),
    ]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    retrieval = retriever.retrieve("which actor did [Ghost Rider] have")
    prepared, ranked = retrieval.prepared, retrieval.plans
    sub = prepared.subgraph
    assert prepared.mediators is not None and ranked is not None
    signed = {name: 2 * i for i, name in enumerate(sub.relation_types)}
    into_performance = signed["FILM.FILM.STARRING"]  # and back from its actor or character
    back_in = [signed["FILM.PERFORMANCE.ACTOR"] + 1, signed["FILM.PERFORMANCE.CHARACTER"] + 1]
    assert prepared.mediators.nonzero().flatten().tolist() == sorted([into_performance, *back_in])
    assert ranked.describe(sub, 1)[0]["steps"] == ["FILM.FILM.STARRING->", "FILM.PERFORMANCE.ACTOR->"]
    assert [a.name for a in PlanReader().extract_answers(retrieval)] == ["Eva Mendes"]
    # Against the same plans read without mediators: a plan earns back exactly the cost of each
    # wordless step into the performance it walks on out of; no other plan moves.
    relation_emb = retriever.tables[1].matrix[prepared.relation_rows]
    planner = NameMatchPlanner()
    steps = ranked.plans.steps
    gained = planner.plan_logits(prepared, relation_emb, steps) - planner.plan_logits(
        replace(prepared, mediators=None), relation_emb, steps
    )
    through = steps_through_mediators(prepared.mediators, steps).sum(dim=1)
    assert int(through.max()) >= 1 and int((through == 0).sum()) >= 1
    torch.testing.assert_close(gained, SHARPNESS * STEP_COST * through.to(gained.dtype))


def test_a_word_naming_a_mediators_other_part_narrows_the_answers(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Cut from WebQSP-evidence's KB: two of Amy Stiller's performances, one in DodgeBall, whose
    # film the question names in lower case and short of its title, so it is no topic.
    triples = [
        ("Amy Stiller", "film.actor.film", "m.063wc3q"),
        ("Amy Stiller", "film.actor.film", "m.0h5kk21"),
        ("DodgeBall: A True Underdog Story", "film.film.starring", "m.063wc3q"),
        ("m.063wc3q", "film.performance.character", "Keno Waitress"),
        ("m.0h5kk21", "film.performance.actor", "Amy Stiller"),
        ("m.0h5kk21", "film.performance.character", "Hansel's Posse Member #1"),
    ]
    question = "who does [Amy Stiller] play in dodgeball"
    retrieval = sure_of(
        _train_free_retrieval(kglite_store, fake_embedder, triples, question),
        ["FILM.ACTOR.FILM->", "FILM.PERFORMANCE.CHARACTER->"],
    )
    local = retrieval.prepared.subgraph.local_ids()
    counts = constraint_counts(retrieval)
    assert int(counts[local["Keno Waitress"]]) == 1
    assert int(counts[local["Hansel's Posse Member #1"]]) == 0
    assert [a.name for a in PlanReader().extract_answers(retrieval)] == ["Keno Waitress"]
    both = {"Keno Waitress", "Hansel's Posse Member #1"}
    assert {a.name for a in PlanReader(constraints=False).extract_answers(retrieval)} == both
    # a word of the relations' names asks for a relation; a word no mediator meets chooses nothing
    for other in ("who does Amy Stiller play in the film", "who does Amy Stiller play in zoolander"):
        answers = PlanReader().extract_answers(replace(retrieval, question=other))
        assert {a.name for a in answers} == both


def test_a_word_meets_a_name_however_either_bears_its_accents(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Cut from WebQSP-evidence's KB: two performances in The Return of the King; the character
    # the question names is spelt "Éowyn" there, typed "eowyn".
    film = "The Lord of the Rings: The Return of the King"
    triples = [
        (film, "film.film.starring", "m.03l6qws"),
        ("m.03l6qws", "film.performance.actor", "Miranda Otto"),
        ("m.03l6qws", "film.performance.character", "Éowyn"),
        (film, "film.film.starring", "m.0k5qrq"),
        ("m.0k5qrq", "film.performance.actor", "Viggo Mortensen"),
        ("m.0k5qrq", "film.performance.character", "Aragorn"),
    ]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    steps = ["FILM.FILM.STARRING->", "FILM.PERFORMANCE.ACTOR->"]
    for question in (f"who plays eowyn in [{film}]", f"who plays Éowyn in [{film}]"):
        retrieval = sure_of(retriever.retrieve(question), steps)
        local = retrieval.prepared.subgraph.local_ids()
        assert int(constraint_counts(retrieval)[local["Miranda Otto"]]) == 1, question
        assert [a.name for a in PlanReader().extract_answers(retrieval)] == ["Miranda Otto"], question


def test_a_part_the_words_alone_single_out_answers_though_filed_the_other_way_round(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Cut from WebQSP-evidence's KB: One for the Money's performances, Debbie Reynolds's filed
    # performance -> actor, Katherine Heigl's actor -> performance; and Samsung's headquarters.
    triples = [
        ("One for the Money", "film.film.starring", "m.0gv_fdr"),
        ("Katherine Heigl", "film.actor.film", "m.0gv_fdr"),
        ("m.0gv_fdr", "film.performance.character", "Stephanie Plum"),
        ("One for the Money", "film.film.starring", "m.0gw22zm"),
        ("m.0gw22zm", "film.performance.actor", "Debbie Reynolds"),
        ("One for the Money", "film.film.starring", "m.0gw2tvh"),
        ("m.0gw2tvh", "film.performance.actor", "Jason O'Mara"),
        ("Samsung Group", "organization.organization.headquarters", "m.03l9ynf"),
        ("Samsung Electronics", "organization.organization.headquarters", "m.03l9ynf"),
        ("m.03l9ynf", "location.mailing_address.citytown", "Suwon"),
        ("m.03l9ynf", "location.mailing_address.country", "South Korea"),
        ("m.03l9ynf", "location.mailing_address.state_province_region", "Gyeonggi Province"),
    ]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    film = sure_of(
        retriever.retrieve("who plays stephanie plum in [One for the Money]"),
        ["FILM.FILM.STARRING->", "FILM.PERFORMANCE.ACTOR->"],
    )
    local = film.prepared.subgraph.local_ids()
    beside = parts_beside_last_step(film)  # every named part of the performances but the film
    cast = {"Debbie Reynolds", "Jason O'Mara"}
    assert {name for name, i in local.items() if beside[i]} == {*cast, "Katherine Heigl", "Stephanie Plum"}
    assert [a.name for a in PlanReader().extract_answers(film)] == ["Katherine Heigl"]
    assert {a.name for a in PlanReader(constraints=False).extract_answers(film)} == cast
    # a part outside the plan's ends answers only where the words single out such parts alone:
    # "samsung" meets every part of the headquarters through Samsung Electronics, the city too
    based = sure_of(
        retriever.retrieve("where are [Samsung Group] based in samsung"),
        ["ORGANIZATION.ORGANIZATION.HEADQUARTERS->", "LOCATION.MAILING_ADDRESS.CITYTOWN->"],
    )
    assert int(constraint_counts(based)[based.prepared.subgraph.local_ids()["South Korea"]]) == 1
    assert [a.name for a in PlanReader().extract_answers(based)] == ["Suwon"]


def test_a_fact_filed_both_ways_round_its_mediator_answers_from_both(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # WebQSP-evidence's kind of facts: Daniel Craig's performances, some filed actor -> performance
    # and some performance -> actor, each film -> performance; and an award through another mediator
    triples = [
        ("Daniel Craig", "film.actor.film", "m.01"),
        ("Skyfall", "film.film.starring", "m.01"),
        ("Daniel Craig", "film.actor.film", "m.02"),
        ("Casino Royale", "film.film.starring", "m.02"),
        ("m.03", "film.performance.actor", "Daniel Craig"),
        ("Layer Cake", "film.film.starring", "m.03"),
        ("Daniel Craig", "award.award_winner.awards_won", "m.04"),
        ("m.04", "award.award_honor.award", "BAFTA Award"),
    ]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    films = retriever.retrieve("what films has [Daniel Craig] been in")
    both_ways = {"Skyfall", "Casino Royale", "Layer Cake"}
    for steps in (
        ["FILM.ACTOR.FILM->", "<-FILM.FILM.STARRING"],
        ["<-FILM.PERFORMANCE.ACTOR", "<-FILM.FILM.STARRING"],
    ):
        retrieval = sure_of(films, steps)
        local = retrieval.prepared.subgraph.local_ids()
        sub = retrieval.prepared.subgraph
        twins = ends_of_mediated_twins(retrieval.plans, sub, retrieval.named)
        assert {name for name, i in local.items() if twins[i]} == both_ways, steps
        assert {a.name for a in PlanReader().extract_answers(retrieval)} == both_ways, steps
        kept = confident_plan_ends(retrieval.plans, retrieval.answerable(), sub, retrieval.named)  # trained
        assert {name for name, i in local.items() if kept[i]} == both_ways, steps
    # the award is reached through another kind of mediator, by another last step: no twin of it
    award = sure_of(films, ["AWARD.AWARD_WINNER.AWARDS_WON->", "AWARD.AWARD_HONOR.AWARD->"])
    assert {a.name for a in PlanReader().extract_answers(award)} == {"BAFTA Award"}


def test_a_category_the_question_names_narrows_the_answers_that_bear_it(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # MetaQA's kind of facts: Tom Hanks's films, their genres, and one film's tag "film"
    triples = [
        *((film, "starred_actors", "Tom Hanks") for film in ("Big", "Splash", "Cast Away", "Philadelphia")),
        ("Big", "has_genre", "Comedy"),
        ("Splash", "has_genre", "Comedy"),
        ("Cast Away", "has_genre", "Drama"),
        ("Philadelphia", "has_genre", "Drama"),
        ("Cast Away", "has_tags", "film"),
        ("Tom Hanks", "has_tags", "actor"),
        ("Big", "has_tags", "actor"),
        ("Splash", "has_tags", "actor"),
    ]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)

    def answers(question: str) -> set[str]:
        retrieval = sure_of(retriever.retrieve(question), ["<-STARRED_ACTORS"])
        return {a.name for a in PlanReader().extract_answers(retrieval)}

    assert answers("which comedies starred [Tom Hanks]") == {"Big", "Splash"}  # "comedies": Comedy
    assert answers("which comédies starred [Tom Hanks]") == {"Big", "Splash"}  # accents aside
    assert answers("which drama films starred [Tom Hanks]") == {"Cast Away", "Philadelphia"}
    # a name one answer alone bears narrows nothing: the tag "film" is no category of the set
    assert answers("which films starred [Tom Hanks]") == {"Big", "Splash", "Cast Away", "Philadelphia"}
    # nor a name the topic bears too: it says what the topic is
    assert answers("which films starred [Tom Hanks] as an actor") == {
        "Big",
        "Splash",
        "Cast Away",
        "Philadelphia",
    }
    everything = PlanReader(constraints=False).extract_answers(
        sure_of(retriever.retrieve("which comedies starred [Tom Hanks]"), ["<-STARRED_ACTORS"])
    )
    assert len(everything) == 4


def test_a_category_narrows_the_likeliest_plans_own_ends_only(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Tom Hanks's films are dramas; his wife's, ends of a plan with the same last step
    # (spouse, then <-starred_actors), are mostly comedies: "comedies" would swap his films for
    # hers, not narrow his
    triples = [
        ("Cast Away", "starred_actors", "Tom Hanks"),
        ("Philadelphia", "starred_actors", "Tom Hanks"),
        ("Cast Away", "has_genre", "Drama"),
        ("Philadelphia", "has_genre", "Drama"),
        ("Tom Hanks", "spouse", "Rita Wilson"),
        ("Sleepless in Seattle", "starred_actors", "Rita Wilson"),
        ("Runaway Bride", "starred_actors", "Rita Wilson"),
        ("The Story of Us", "starred_actors", "Rita Wilson"),
        ("Sleepless in Seattle", "has_genre", "Comedy"),
        ("Runaway Bride", "has_genre", "Comedy"),
        ("The Story of Us", "has_genre", "Drama"),
    ]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    his = sure_of(retriever.retrieve("which comedies starred [Tom Hanks]"), ["<-STARRED_ACTORS"])
    kin = ends_of_kin_plans(his)
    local = his.prepared.subgraph.local_ids()
    assert bool(kin[local["Runaway Bride"]]) and bool(kin[local["Cast Away"]])
    assert int(neighbours_named(his, kin).sum()) == 0
    hers = sure_of(retriever.retrieve("which comedies starred [Rita Wilson]"), ["<-STARRED_ACTORS"])
    counts = neighbours_named(hers, ends_of_kin_plans(hers))
    local = hers.prepared.subgraph.local_ids()
    assert {name for name, i in local.items() if counts[i]} == {"Sleepless in Seattle", "Runaway Bride"}


def test_the_last_or_first_of_answers_dated_by_name_is_asked_for(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Cut from WebQSP-evidence's KB: the Orioles' World Series wins, each dated by its name.
    won = ["1966 World Series", "1970 World Series", "1983 World Series"]
    triples = [(series, "sports.sports_championship_event.champion", "Baltimore Orioles") for series in won]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    for question, answers in [
        ("when was the last time the [Baltimore Orioles] won the world series?", ["1983 World Series"]),
        ("when did the [Baltimore Orioles] first win the world series?", ["1966 World Series"]),
        ("which world series did the [Baltimore Orioles] win?", won),
    ]:
        retrieval = retriever.retrieve(question)  # one plan: back from the champion
        assert sorted(a.name for a in PlanReader().extract_answers(retrieval)) == answers, question


def test_the_latest_answer_is_dated_by_the_relation_most_answers_have_a_year_along(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Cut from MetaQA's KB: three of Robert Zemeckis's films; Back to the Future Part II is
    # tagged with the year it is set in, after Flight's release.
    films = {"Back to the Future Part II": "1989", "Cast Away": "2000", "Flight": "2012"}
    triples = [(film, "directed_by", "Robert Zemeckis") for film in films]
    triples += [(film, "release_year", year) for film, year in films.items()]
    triples += [("Back to the Future Part II", "has_tags", "2015")]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    retrieval = sure_of(
        retriever.retrieve("what is the latest film directed by [Robert Zemeckis]"), ["<-DIRECTED_BY"]
    )
    assert [a.name for a in PlanReader().extract_answers(retrieval)] == ["Flight"]
    assert [
        a.name
        for a in PlanReader().extract_answers(
            replace(retrieval, question="what is the first film directed by [Robert Zemeckis]")
        )
    ] == ["Back to the Future Part II"]


def test_answers_of_mixed_kinds_are_read_as_the_numbered_series_of_the_first(
    kglite_store: KgliteStore, fake_embedder: FakeEmbedder
) -> None:
    # Cut from WebQSP-evidence's KB: the Steelers' championships, Super Bowls numbered, not dated;
    # two of five bear no year, so the years of the rest do not order them all.
    won = ["Super Bowl IX", "Super Bowl XIV", "Super Bowl XLIII", "1996 AFC Championship Game"]
    won += ["2011 AFC Championship Game"]
    triples = [(game, "sports.sports_championship_event.champion", "Pittsburgh Steelers") for game in won]
    retriever = _train_free_retriever(kglite_store, fake_embedder, triples)
    reader = PlanReader(retriever.tables[0])  # the names nearest the question's words first
    for question, answers in [
        ("when is the last time the [Pittsburgh Steelers] won the super bowl?", ["Super Bowl XLIII"]),
        ("when did the [Pittsburgh Steelers] first win the super bowl?", ["Super Bowl IX"]),
        (
            "when did the [Pittsburgh Steelers] last win the afc championship game?",
            ["2011 AFC Championship Game"],
        ),
        ("which super bowls did the [Pittsburgh Steelers] win?", sorted(won)),
    ]:
        retrieval = retriever.retrieve(question)  # one plan: back from the champion
        assert sorted(a.name for a in reader.extract_answers(retrieval)) == answers, question


def _train_free_retrieval(
    store: KgliteStore, embedder: FakeEmbedder, triples: list[tuple[str, str, str]], question: str
) -> Retrieval:
    """``question`` retrieved train-free from ``store`` loaded with ``triples``."""
    return _train_free_retriever(store, embedder, triples).retrieve(question)


def _train_free_retriever(
    store: KgliteStore, embedder: FakeEmbedder, triples: list[tuple[str, str, str]]
) -> Retriever:
    """A train-free retriever over ``store`` loaded with ``triples``."""
    from ingest.embedding import embed_store
    from ingest.loader import load

    records = [TripleRecord(*t, line=i + 1) for i, t in enumerate(triples)]
    load(store, records, source="t", fmt="test", source_key="t")
    embed_store(store, embedder)
    return Retriever.train_free(store, embedder)


def test_the_topic_answers_only_where_the_likeliest_plan_comes_home() -> None:
    # "the wife of e0 's husband": SPOUSE both ways (relation 1), and e0 -GENDER (relation 0)-> e2
    kin = make_subgraph(3, [(0, 1), (1, 0), (0, 2)], rels=["SPOUSE", "SPOUSE", "GENDER"])
    sub = replace(kin, topic_walks_if_needed=True)
    plans = enumerate_plans(sub, max_steps=2)
    steps = plans.steps.tolist()

    def allowed(subgraph: object, likeliest: list[int]) -> bool:
        probabilities = torch.full((plans.num_plans,), 0.1)
        probabilities[steps.index(likeliest)] = 0.9
        retrieval = SimpleNamespace(
            prepared=SimpleNamespace(subgraph=subgraph),
            plans=RankedPlans(plans, probabilities),
            answerable=kin.candidate_mask,
        )
        return bool(answerable(retrieval)[0])  # type: ignore[arg-type]

    assert allowed(sub, [2, 2])  # SPOUSE, SPOUSE: the likeliest plan comes home
    assert not allowed(sub, [0, -1])  # GENDER likeliest: a runner-up coming home does not answer
    assert not allowed(kin, [2, 2])  # never back


def test_topic_contenders_compete_at_the_step_cost_of_the_largest_subgraph(
    toy_kg: KgliteStore, fake_embedder: FakeEmbedder, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import kgqa.retrieval.retriever as retriever_module
    from kgqa.link import LinkResult
    from kgqa.types import LinkedEntity

    read: list[tuple[int, int | None]] = []  # per contender: its subgraph's relation types, the count read
    plan_logits = NameMatchPlanner.plan_logits

    def spy(self, prepared, relation_emb, steps):  # type: ignore[no-untyped-def]
        read.append((len(prepared.subgraph.relation_types), prepared.run_words.relation_count))
        return plan_logits(self, prepared, relation_emb, steps)

    monkeypatch.setattr(NameMatchPlanner, "plan_logits", spy)
    contenders = tuple(LinkedEntity(n, n, 0.95, "it", "exact") for n in ("Tom Hanks", "Jaws"))
    monkeypatch.setattr(
        retriever_module, "link", lambda *a, **k: LinkResult(contenders, chosen=contenders[:1])
    )
    # one hop: Tom Hanks's subgraph holds starred_actors only, Jaws's directed_by and has_genre
    Retriever.train_free(toy_kg, fake_embedder).retrieve("who directed it", hops=1)
    own = [count for count, _ in read]
    assert len(read) == 2 and own[0] != own[1]  # two subgraphs of different sizes
    assert [count for _, count in read] == [max(own), max(own)]
    read.clear()
    alone = contenders[1:]  # no contender: the subgraph's own count
    monkeypatch.setattr(retriever_module, "link", lambda *a, **k: LinkResult(alone, chosen=alone))
    Retriever.train_free(toy_kg, fake_embedder).retrieve("who directed it", hops=1)
    assert [count for _, count in read] == [None]
