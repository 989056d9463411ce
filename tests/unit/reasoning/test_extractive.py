"""Extractive reader: incident and path features against hand-computed values, the entity scorer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from subgraphs import D, random_batch, sure_of

from kgqa.reasoning.extractive import (
    THRESHOLD_GRID,
    UNCALIBRATED_THRESHOLD,
    EntityReader,
    ExtractiveReader,
    ReaderConfig,
    answer_set_f1,
    calibrate_threshold,
    incident_relation_context,
    incident_score_features,
    path_features,
    ranked_answers,
)
from kgqa.retrieval.models.plans import RankedPlans
from kgqa.retrieval.models.scorer import ScorerBatch, entity_inputs
from kgqa.retrieval.retriever import Retrieval, Retriever

# 4 entities; triples 0->1 (0.9), 1->2 (0.2), 2->1 (0.5), 0->0 (0.4, a self-loop); entity 3 isolated.
READER_HEAD = [0, 1, 2, 0]
READER_TAIL = [1, 2, 1, 0]
READER_SCORES = [0.9, 0.2, 0.5, 0.4]
# Columns: max incident, mean incident (self-loop once), max as tail, max as head.
READER_EXPECTED = [
    [0.9, (0.9 + 0.4) / 2, 0.4, 0.9],
    [0.9, (0.9 + 0.2 + 0.5) / 3, 0.9, 0.2],
    [0.5, (0.2 + 0.5) / 2, 0.2, 0.5],
    [0.0, 0.0, 0.0, 0.0],
]


def test_incident_score_features_match_hand_computed_values(device: torch.device) -> None:
    feats = incident_score_features(
        torch.tensor(READER_SCORES, device=device),
        torch.tensor(READER_HEAD, device=device),
        torch.tensor(READER_TAIL, device=device),
        4,
    )
    assert feats.device.type == device.type
    torch.testing.assert_close(feats.cpu(), torch.tensor(READER_EXPECTED))


def test_incident_score_features_are_zero_without_triples() -> None:
    empty = torch.tensor([], dtype=torch.long)
    assert torch.equal(incident_score_features(torch.tensor([]), empty, empty, 3), torch.zeros(3, 4))


def test_entity_reader_scores_every_entity_and_round_trips(tmp_path: Path, device: torch.device) -> None:
    torch.manual_seed(0)
    model = EntityReader(ReaderConfig(emb_dim=D, hidden=16)).eval().to(device)
    batch = random_batch(4).to(device)
    scores = torch.rand(batch.num_triples, device=device)
    topic = torch.tensor([0], device=device)
    out = model(batch, scores, topic)
    assert out.shape == (batch.num_entities,)
    assert out.device.type == device.type
    path = tmp_path / "reader.pt"
    torch.save(model.checkpoint(embedder_model_id="m"), path)
    loaded = EntityReader.from_checkpoint(path).to(device)
    torch.testing.assert_close(loaded(batch, scores, topic), out)


def test_entity_reader_equals_its_first_layer_on_the_explicit_concatenation() -> None:
    # The question's share of the first layer is computed once; the logits must be those of the
    # layer applied to [q || x_e || dde || incident || relation context || path || plan] per entity.
    torch.manual_seed(0)
    model = EntityReader(ReaderConfig(emb_dim=D, hidden=16, plan_dim=3)).eval()
    batch = random_batch(6)
    scores, topic = torch.rand(batch.num_triples), torch.tensor([0])
    plans = torch.rand(batch.num_entities, 3)
    z = torch.cat(
        [
            batch.question.reshape(1, D).expand(batch.num_entities, -1),
            entity_inputs(batch, model.no_text),
            batch.dde,
            incident_score_features(scores, batch.head, batch.tail, batch.num_entities),
            incident_relation_context(scores, batch),
            path_features(scores, batch, topic),
            plans,
        ],
        dim=1,
    )
    with torch.no_grad():
        torch.testing.assert_close(model(batch, scores, topic, plans), model.mlp(model.first(z)).squeeze(-1))


def test_entity_reader_shares_no_text_vector() -> None:
    torch.manual_seed(0)
    model = EntityReader(ReaderConfig(emb_dim=D, hidden=16)).eval()
    batch = random_batch(5)
    scores = torch.rand(batch.num_triples)
    emb = batch.entity_emb.clone()
    emb[~batch.has_text] += 50.0
    changed = dataclasses.replace(batch, entity_emb=emb)
    topic = torch.tensor([0])
    torch.testing.assert_close(model(changed, scores, topic), model(batch, scores, topic))
    model.train()
    model(batch, scores, topic).sum().backward()
    assert model.no_text.grad is not None and model.no_text.grad.abs().sum() > 0


def test_incident_relation_context_is_score_weighted_mean_per_end() -> None:

    relation_emb = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # triples: 0 -r0-> 1 (score 0.75), 2 -r1-> 1 (score 0.25), 1 -r1-> 3 (score 1.0)
    batch = ScorerBatch(
        question=torch.zeros(2),
        entity_emb=torch.zeros(4, 2),
        has_text=torch.ones(4, dtype=torch.bool),
        relation_emb=relation_emb,
        head=torch.tensor([0, 2, 1]),
        rel=torch.tensor([0, 1, 1]),
        tail=torch.tensor([1, 1, 3]),
        dde=torch.zeros(4, 10),
    )
    context = incident_relation_context(torch.tensor([0.75, 0.25, 1.0]), batch)
    expected = torch.tensor(
        [
            [0.0, 0.0, 1.0, 0.0],  # entity 0: no incoming; outgoing r0
            [0.75, 0.25, 0.0, 1.0],  # entity 1: incoming 0.75*r0 + 0.25*r1 over 1.0; outgoing r1
            [0.0, 0.0, 0.0, 1.0],  # entity 2: outgoing r1
            [0.0, 1.0, 0.0, 0.0],  # entity 3: incoming r1
        ]
    )
    assert torch.allclose(context, expected)


def test_path_features_give_reach_its_log_and_inward_outward_scores() -> None:

    # Topic 0; triples 0 -> 1 (0.5), 1 -> 2 (0.1), 3 -> 1 (0.7), 2 -> 4 (0.9).
    # Hop distances 0, 1, 2, 2, 3; reach 1, 0.5, 0.05, 0.35, 0.045; entity 5 is unreachable.
    batch = ScorerBatch(
        question=torch.zeros(2),
        entity_emb=torch.zeros(6, 2),
        has_text=torch.ones(6, dtype=torch.bool),
        relation_emb=torch.zeros(1, 2),
        head=torch.tensor([0, 1, 3, 2]),
        rel=torch.tensor([0, 0, 0, 0]),
        tail=torch.tensor([1, 2, 1, 4]),
        dde=torch.zeros(6, 10),
    )
    feats = path_features(torch.tensor([0.5, 0.1, 0.7, 0.9]), batch, torch.tensor([0]))
    reach = torch.tensor([1.0, 0.5, 0.05, 0.35, 0.045, 0.0])
    torch.testing.assert_close(feats[:, 0], reach)
    # 1 - log(reach) / log(1e-6): 1 at a topic, 0 at (or below) the floor.
    floor = torch.tensor(1e-6)
    torch.testing.assert_close(feats[:, 1], 1 - torch.log(reach.clamp(min=1e-6)) / torch.log(floor))
    # Entity 1 is entered from the topic (0.5) and left towards 2 (0.1) and 3 (0.7).
    torch.testing.assert_close(feats[:, 2], torch.tensor([0.0, 0.5, 0.1, 0.7, 0.9, 0.0]))
    torch.testing.assert_close(feats[:, 3], torch.tensor([0.5, 0.7, 0.9, 0.0, 0.0, 0.0]))


def test_answer_set_f1_counts_every_entity_at_the_threshold_and_always_the_best() -> None:
    probabilities = torch.tensor([0.9, 0.6, 0.2, -1.0])  # -1: may not answer
    gold = torch.tensor([True, True, False, False])
    assert answer_set_f1(probabilities, gold, 0.5) == 1.0
    assert answer_set_f1(probabilities, gold, 0.1) == pytest.approx(0.8)  # 2 of 3 right
    assert answer_set_f1(probabilities, gold, 0.95) == pytest.approx(2 / 3)  # the best alone


def test_calibrate_threshold_picks_the_cut_that_returns_whole_answer_sets() -> None:
    many = (torch.tensor([0.8, 0.7, 0.65, 0.1]), torch.tensor([True, True, True, False]))
    one = (torch.tensor([0.9, 0.3, 0.2, 0.1]), torch.tensor([True, False, False, False]))
    threshold = calibrate_threshold([many, one])
    assert 0.3 < threshold <= 0.65
    assert calibrate_threshold([]) == 0.5


def test_a_reader_with_a_threshold_returns_the_whole_answer_set(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    assert extractive.model.config.answer_threshold in THRESHOLD_GRID  # training calibrated one
    retrieval = trained.retrieve("what films did [Tom Hanks] act in")
    probabilities = extractive.entity_probabilities(retrieval)
    threshold = float(probabilities.sort(descending=True).values[2]) - 1e-6  # three at or above it

    def reader(threshold: float | None, *, plan_answers: bool = True) -> ExtractiveReader:
        config = dataclasses.replace(extractive.model.config, answer_threshold=threshold)
        model = EntityReader(config)
        model.load_state_dict(extractive.model.state_dict())
        return ExtractiveReader(model.eval(), extractive.tables, plan_answers=plan_answers)

    assert len(reader(threshold).extract_answers(retrieval, top_n=1)) == 3  # top_n: only without one
    assert len(reader(None).extract_answers(retrieval, top_n=1)) == 1
    # without one, those of the top_n best at an even chance or more (the best whatever its chance)
    uncalibrated = reader(None, plan_answers=False)  # every entity may answer
    assert int((probabilities < UNCALIBRATED_THRESHOLD).sum()) > 0  # some below it to leave out
    answers = uncalibrated.extract_answers(retrieval, top_n=len(probabilities))
    assert len(answers) == max(1, int((probabilities >= UNCALIBRATED_THRESHOLD).sum()))


def test_a_plan_the_planner_is_sure_of_holds_the_answers(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    # The directors of Tom Hanks's films made the likeliest plan: at 0.9 the answers are among its
    # ends, at 0.4 (less than all other plans together) the reader ranks every entity.
    retrieval = trained.retrieve("what films did [Tom Hanks] act in")
    assert retrieval.plans is not None
    plans, sub = retrieval.plans.plans, retrieval.prepared.subgraph
    order = torch.argsort(retrieval.plans.probabilities, descending=True).tolist()
    described = retrieval.plans.describe(sub, len(order))
    directors = order[[p["steps"] for p in described].index(["<-STARRED_ACTORS", "DIRECTED_BY->"])]
    ends = {sub.entity_ids[e] for e in plans.end_entity[plans.end_plan == directors].tolist()}

    def sure_of_directors(probability: float) -> Retrieval:
        probabilities = torch.full((len(order),), (1 - probability) / (len(order) - 1))
        probabilities[directors] = probability
        return dataclasses.replace(retrieval, plans=RankedPlans(plans, probabilities))

    def answers(reader: ExtractiveReader, probability: float) -> list[str]:
        return [a.id for a in reader.extract_answers(sure_of_directors(probability))]

    off = ExtractiveReader(extractive.model, extractive.tables, plan_answers=False)
    assert set(answers(off, 0.9)) - ends  # the reader alone keeps films beside the directors
    assert answers(extractive, 0.9) and set(answers(extractive, 0.9)) <= ends
    assert answers(extractive, 0.4) == answers(off, 0.4)


def test_answers_of_two_topics_are_the_ends_tied_to_both(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    # The toy reader learnt one-topic questions only: alone it ranks Spielberg's Jaws and Tom
    # Hanks's other films beside The Terminal, the one film tied to both.
    retrieval = trained.retrieve("what films did [Tom Hanks] act in with [Steven Spielberg]")
    off = ExtractiveReader(extractive.model, extractive.tables, plan_answers=False)
    assert {"Jaws", "Cast Away"} <= {a.name for a in off.extract_answers(retrieval)}
    assert [a.name for a in extractive.extract_answers(retrieval)] == ["The Terminal"]


def test_a_word_naming_a_mediators_other_part_narrows_the_readers_answers(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    # Read Steven Spielberg as a nameless mediator between his films: of Tom Hanks's films only
    # The Terminal meets "jaws" through him, though the reader ranks others beside it.
    retrieval = trained.retrieve("what films did [Tom Hanks] act in by the director of jaws", hops=3)
    sure, sub = sure_of(retrieval, ["<-STARRED_ACTORS"]), retrieval.prepared.subgraph
    off = ExtractiveReader(extractive.model, extractive.tables, plan_answers=False)
    assert {a.name for a in off.extract_answers(sure, top_n=3)} != {"The Terminal"}
    named = torch.ones(sub.num_entities, dtype=torch.bool)
    named[sub.local_ids()["Steven Spielberg"]] = False
    mediated = dataclasses.replace(sure, named=named)
    assert [a.name for a in extractive.extract_answers(mediated)] == ["The Terminal"]
    assert [a.name for a in off.extract_answers(mediated, top_n=3)] == ["The Terminal"]
    unconstrained = ExtractiveReader(
        extractive.model, extractive.tables, plan_answers=False, constraints=False
    )
    assert [a.name for a in unconstrained.extract_answers(mediated, top_n=3)] != ["The Terminal"]


def test_the_plan_the_answers_follow_is_shown_first(trained: Retriever, extractive: ExtractiveReader) -> None:
    from kgqa.pipeline import shown_plans

    retrieval = trained.retrieve("what films did [Tom Hanks] act in with [Steven Spielberg]")
    likeliest = [" ".join(p["steps"]) for p in retrieval.plans.describe(retrieval.prepared.subgraph, 3)]
    assert likeliest[0] == "<-DIRECTED_BY"  # Spielberg's films
    terminal = extractive.extract_answers(retrieval)[0].id
    marked = [(p.text, p.followed) for p in shown_plans(retrieval, terminal)]
    assert marked == [(likeliest[0], True), *((t, False) for t in likeliest[1:])]
    # Cast Away is a walk end of Tom Hanks's films only: that plan leads, the likeliest follows it
    cast_away = shown_plans(retrieval, "Cast Away")
    marked = [(p.text, p.followed) for p in cast_away[:2]]
    assert marked == [("<-STARRED_ACTORS", True), (likeliest[0], False)]
    assert cast_away[0].probability < cast_away[1].probability
    # no answer, or one no plan ends at (a topic): the likeliest first, none marked
    for first in (None, "Tom Hanks"):
        marked = [(p.text, p.followed) for p in shown_plans(retrieval, first)]
        assert marked == [(t, False) for t in likeliest]


def test_the_first_answer_does_not_depend_on_how_many_are_returned(trained: Retriever) -> None:
    # equal probabilities (a reader sure of several answers saturates): the first in the
    # subgraph's order leads, whether one answer is asked for or all of them
    retrieval = trained.retrieve("what films did [Tom Hanks] act in")
    n = retrieval.prepared.subgraph.num_entities
    equals = torch.randperm(n, generator=torch.Generator().manual_seed(0))[: n // 2]
    assert len(equals) >= 3
    probabilities = torch.zeros(n)
    probabilities[equals] = 0.999
    allowed = torch.ones(n, dtype=torch.bool)
    answers = [
        ranked_answers(retrieval, probabilities, allowed, k, support=1) for k in range(1, len(equals) + 1)
    ]
    assert {a[0].id for a in answers} == {retrieval.prepared.subgraph.entity_ids[int(equals.min())]}
    assert [a.score for a in answers[-1]] == [pytest.approx(0.999)] * len(equals)


def test_the_reader_answers_the_latest_of_its_answers_where_the_question_asks_for_it(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    retrieval = trained.retrieve("which films did [Robert Zemeckis] direct")
    local = retrieval.prepared.subgraph.local_ids()
    probabilities = torch.zeros(retrieval.prepared.subgraph.num_entities)
    probabilities[[local["Forrest Gump"], local["Cast Away"]]] = 0.99  # released 1994, 2000
    reader = ExtractiveReader(extractive.model, extractive.tables, plan_answers=False)

    def answers(question: str) -> list[str]:
        asked = dataclasses.replace(retrieval, question=question)
        return sorted(a.name for a in reader.extract_answers(asked, probabilities=probabilities))

    assert answers("which films did [Robert Zemeckis] direct") == ["Cast Away", "Forrest Gump"]
    assert answers("what is the latest film [Robert Zemeckis] directed") == ["Cast Away"]
    assert answers("what was the first film [Robert Zemeckis] directed") == ["Forrest Gump"]
