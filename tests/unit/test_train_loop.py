"""The shared training loop (`retriever_training.train._fit`): steps per batch, Adam's arithmetic,
and the models' width by the training part's size."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from conftest import FakeEmbedder, toy_examples

import retriever_training.train as train_module
from kgqa.reasoning import plan_ends
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.plans import rank_plans
from kgqa.store.kglite_store import KgliteStore
from retriever_training.examples import build_examples
from retriever_training.train import (
    NARROW_FROM,
    NARROW_HIDDEN,
    NOISE_CAP,
    STEPS_PER_EPOCH,
    WIDE_HIDDEN,
    TrainSettings,
    _fit,
    batch_for,
    hidden_for,
    train_planner,
    train_reader,
    train_scorer,
)


def _problem(n: int = 10) -> tuple[torch.nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    data = [(torch.randn(5, 6), torch.randn(5, 1)) for _ in range(n)]
    return model, data


def _train(
    model: torch.nn.Module,
    data: list[Any],
    batch_size: int,
    steps: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def scored(ex: Any) -> tuple[torch.Tensor, torch.Tensor]:
        out = model(ex[0])
        return out, ((out - ex[1]) ** 2).mean()

    counting = torch.optim.Adam.step

    def step(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
        steps.append(1)
        return counting(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.optim.Adam, "step", step)
    _fit(
        model,
        data,
        data[:2],
        scored=lambda items: [scored(ex) for ex in items],
        metric_of=lambda ex, out: 0.0,
        metric="none",
        settings=TrainSettings(epochs=1, patience=1, min_epochs=1),
        desc="test",
        progress=False,
        batch_size=batch_size,
    )


def test_one_question_per_step_matches_plain_per_tensor_adam_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, data = _problem()
    reference = copy.deepcopy(model)
    steps: list[int] = []
    _train(model, data, 1, steps, monkeypatch)
    assert len(steps) == len(data)
    optimiser = torch.optim.Adam(reference.parameters(), lr=TrainSettings().lr, foreach=False)
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(TrainSettings().seed))
    for i in order.tolist():
        loss = ((reference(data[i][0]) - data[i][1]) ** 2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    for got, want in zip(model.state_dict().values(), reference.state_dict().values(), strict=True):
        assert torch.equal(got, want)


def test_batches_average_their_questions_losses_in_one_step(monkeypatch: pytest.MonkeyPatch) -> None:
    model, data = _problem()
    reference = copy.deepcopy(model)
    steps: list[int] = []
    _train(model, data, 4, steps, monkeypatch)
    assert len(steps) == 3  # 10 questions: 4 + 4 + 2
    optimiser = torch.optim.Adam(reference.parameters(), lr=TrainSettings().lr)
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(TrainSettings().seed)).tolist()
    for start in range(0, len(order), 4):
        chunk = order[start : start + 4]
        loss = torch.stack([((reference(data[i][0]) - data[i][1]) ** 2).mean() for i in chunk]).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    for got, want in zip(model.state_dict().values(), reference.state_dict().values(), strict=True):
        torch.testing.assert_close(got, want)


def test_train_settings_from_the_default_config_are_the_train_settings_defaults() -> None:
    """The trainer's record takes its defaults from the config's [train] section: one source."""
    from kgqa.config import Settings

    assert TrainSettings.from_config(Settings().train) == TrainSettings()


@pytest.mark.parametrize(("patience", "min_epochs", "ran"), [(3, 3, 4), (1, 3, 3), (2, 1, 3)])
def test_early_stopping_waits_patience_epochs_after_the_best_but_never_stops_before_min_epochs(
    patience: int, min_epochs: int, ran: int
) -> None:
    """A metric that never improves after the first epoch (and a loss that does not fall): the
    best stays epoch 1, and training ends after ``patience`` stale epochs, or at ``min_epochs``."""
    model, problem = _problem(4)
    data: list[Any] = list(problem)
    validations: list[int] = []

    def scored(ex: Any) -> tuple[torch.Tensor, torch.Tensor]:
        out = model(ex[0])
        if model.training:
            return out, ((out - ex[1]) ** 2).mean()
        validations.append(1)
        return out, torch.tensor(float(len(validations)))  # validation loss rises every epoch

    history = _fit(
        model,
        data,
        data[:1],
        scored=lambda items: [scored(ex) for ex in items],
        metric_of=lambda ex, out: 0.5,
        metric="constant",
        settings=TrainSettings(epochs=10, patience=patience, min_epochs=min_epochs),
        desc="test",
        progress=False,
    )
    assert len(history.val_metric) == ran
    assert history.best_epoch == 1


DEFAULTS = TrainSettings()


@pytest.mark.parametrize("questions", [5, 99, 250, 1000, 1600, 3000, 40000])
@pytest.mark.parametrize("most", [DEFAULTS.planner_batch, DEFAULTS.scorer_batch, DEFAULTS.reader_batch])
def test_a_batch_keeps_an_epochs_steps_on_a_small_training_part(questions: int, most: int) -> None:
    """At most ``most`` questions a step, at least STEPS_PER_EPOCH steps an epoch where the part
    allows batches of at least one."""
    batch = batch_for(most, questions)
    assert 1 <= batch <= most
    steps = -(-questions // batch)
    assert steps >= min(questions, STEPS_PER_EPOCH)
    if batch < most:  # shrunk only as far as the steps need
        assert questions // (batch + 1) < STEPS_PER_EPOCH
    assert batch_for(1, questions) == 1


@pytest.mark.parametrize(
    ("spread", "gain", "past_noise", "ran", "best"),
    [
        (0.001, 0.0005, True, 3, 3),  # below the standard error: noise
        (0.001, 0.005, True, 6, 6),  # beyond it
        (0.1, 0.004, True, 3, 3),  # below the cap on a wide spread
        (0.1, 0.04, True, 6, 6),  # beyond the cap, though within the standard error
        (0.001, 0.0005, False, 6, 6),  # any rise counts without patience_past_noise
    ],
)
def test_patience_counts_gains_beyond_the_metrics_standard_error(
    spread: float, gain: float, past_noise: bool, ran: int, best: int
) -> None:
    """Two validation questions scored mean +- spread (standard error = spread): a mean that
    rises by less than min(standard error, NOISE_CAP) each epoch is noise and patience runs out,
    though the best (last) epoch's weights are kept; a mean that rises by more keeps training to
    the last epoch, and so does any rise with ``patience_past_noise=False``."""
    assert 2 * 0.004 < NOISE_CAP < 0.04  # the cases straddle it
    model, problem = _problem(4)
    data: list[Any] = list(problem)
    calls: list[int] = []

    def scored(ex: Any) -> tuple[torch.Tensor, torch.Tensor]:
        out = model(ex[0])
        return out, ((out - ex[1]) ** 2).mean()

    def metric_of(ex: Any, out: torch.Tensor) -> float:
        calls.append(1)
        epoch, side = divmod(len(calls) - 1, 2)
        return 0.1 + gain * epoch + (spread if side else -spread)

    history = _fit(
        model,
        data,
        data[:2],
        scored=lambda items: [scored(ex) for ex in items],
        metric_of=metric_of,
        metric="rising",
        settings=TrainSettings(epochs=6, patience=2, min_epochs=1, patience_past_noise=past_noise),
        desc="test",
        progress=False,
    )
    assert len(history.val_metric) == ran
    assert history.best_epoch == best


@pytest.mark.parametrize(
    ("questions", "width"), [(1, WIDE_HIDDEN), (NARROW_FROM - 1, WIDE_HIDDEN), (NARROW_FROM, NARROW_HIDDEN)]
)
def test_an_unset_width_follows_the_training_parts_size(questions: int, width: int) -> None:
    assert hidden_for(None, questions) == width
    assert hidden_for(48, questions) == 48  # a width the user sets is kept


def test_the_scorer_and_reader_are_as_wide_as_their_training_part_says(
    toy_kg: KgliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``hidden`` unset, the trained models' configs carry the width :func:`hidden_for`
    gives their training part: the narrow one from NARROW_FROM questions (here lowered to the toy
    part's size), the wide one below."""
    embedder = FakeEmbedder()
    tables = (EntityTable(toy_kg, embedder.dimension), RelationTable(toy_kg))
    examples = build_examples(toy_kg, embedder, toy_examples(), tables, SubgraphSettings(hops=2))
    settings = TrainSettings(epochs=1, min_epochs=1, scorer_hidden=None, reader_hidden=None, recall_k=2)
    for narrow_from, width in ((len(examples), NARROW_HIDDEN), (len(examples) + 1, WIDE_HIDDEN)):
        monkeypatch.setattr(train_module, "NARROW_FROM", narrow_from)
        scorer, _ = train_scorer(examples, examples, tables, settings, progress=False)
        reader, _ = train_reader(examples, examples, scorer, tables, settings, progress=False)
        assert scorer.config.hidden == reader.config.hidden == width


def test_the_readers_threshold_is_calibrated_among_the_ends_it_answers_from(
    toy_kg: KgliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a planner, each validation question's entities are calibrated on where the reader
    answers (``answer.plan_answers``): a sure plan's ends (every likeliest plan is sure here), not
    every entity of the subgraph."""
    embedder = FakeEmbedder()
    tables = (EntityTable(toy_kg, embedder.dimension), RelationTable(toy_kg))
    examples = build_examples(toy_kg, embedder, toy_examples(), tables, SubgraphSettings(hops=2))
    settings = TrainSettings(epochs=1, min_epochs=1, recall_k=2)
    scorer, _ = train_scorer(examples, examples, tables, settings, progress=False)
    planner, _ = train_planner(examples, examples, tables, settings, progress=False)
    monkeypatch.setattr(plan_ends, "CONFIDENT_PLAN", 0.0)
    calibrated: list[list[tuple[torch.Tensor, torch.Tensor]]] = []
    monkeypatch.setattr(train_module, "calibrate_threshold", lambda sets: calibrated.append(sets) or 0.5)
    train_reader(examples, examples, scorer, tables, settings, planner=planner, progress=False)
    (sets,) = calibrated
    answered = [ex for ex in examples if bool(ex.answers.any())]
    assert len(sets) == len(answered)
    narrowed = 0
    for ex, (probabilities, _) in zip(answered, sets, strict=True):
        ends = torch.zeros(ex.prepared.subgraph.num_entities, dtype=torch.bool)
        ends[rank_plans(planner, ex.prepared, tables).top_ends()] = True
        may_answer, candidates = probabilities >= 0, ex.prepared.subgraph.candidate_mask()
        if bool((ends & candidates).any()):  # else every candidate stays
            assert not bool((may_answer & ~ends).any())
        narrowed += int(may_answer.sum()) < int(candidates.sum())
    assert narrowed > 0  # some question has entities no likeliest plan ends at


def test_planner_steps_score_their_questions_together_as_each_alone() -> None:
    from kgqa.retrieval.models.plans import QUESTION_VIEWS, PlannerConfig, PlanScorer
    from retriever_training.train import PlanChoice, _plans_scored_alone, _plans_scored_together

    torch.manual_seed(3)
    model = PlanScorer(PlannerConfig(emb_dim=8, hidden=16, max_steps=3, name_match=True))
    choices: list[PlanChoice | None] = []
    for relations, plans, length in ((3, 12, 3), (6, 30, 2), (2, 4, 3)):
        steps = torch.randint(0, 2 * relations, (plans, length))
        gold = torch.zeros(plans, dtype=torch.bool)
        gold[torch.randint(0, plans, (2,))] = True
        views, relation_emb = torch.randn(QUESTION_VIEWS, 8), torch.randn(relations, 8)
        choices += [PlanChoice(views, None, relation_emb, steps, gold), None]
    together = _plans_scored_together(model, choices, "cpu")
    assert [r is None for r in together] == [c is None for c in choices]
    loss = torch.stack([r[1] for r in together if r is not None]).mean()
    grads = torch.autograd.grad(loss, list(model.parameters()))
    alone = _plans_scored_alone(model, choices, "cpu")
    alone_losses = []
    for together_result, alone_result in zip(together, alone, strict=True):
        if alone_result is None:
            continue
        assert together_result is not None
        torch.testing.assert_close(together_result[0], alone_result[0])
        torch.testing.assert_close(together_result[1], alone_result[1])
        alone_losses.append(alone_result[1])
    alone_grads = torch.autograd.grad(torch.stack(alone_losses).mean(), list(model.parameters()))
    for a, b in zip(grads, alone_grads, strict=True):
        torch.testing.assert_close(a, b)
