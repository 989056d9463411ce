"""Training loops for the triple scorers, the planner and the extractive reader (several
questions per step: ``TrainSettings.scorer_batch``, ``planner_batch`` and ``reader_batch``).

The scorer, the second-pass path scorer (:mod:`kgqa.retrieval.models.path_context`) and the reader
train with BCE, the planner (:mod:`kgqa.retrieval.models.plans`) with a softmax over each question's
plans; all with Adam and early stopping on a validation metric (recall@100 of the labelled
triples for the scorers, how often the top plan is gold for the planner, Hit@1 for the reader),
following SubgraphRAG's reference recipe; the best epoch's weights are kept. The metrics are
coarse (a few thousand questions, often near 1.0), so an epoch that only ties the best metric
counts as better when its validation loss is lower, patience counts only gains beyond the
metric's standard error, and no model stops before ``min_epochs`` (:func:`_fit`). Runs are
deterministic for a given seed.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, TypeVar

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from kgqa.config import TRAIN_DEFAULTS, TrainingSettings
from kgqa.device import model_device
from kgqa.errors import ConfigError
from kgqa.reasoning.extractive import (
    EntityReader,
    ReaderConfig,
    ReaderFeatures,
    calibrate_threshold,
    reader_features,
)
from kgqa.reasoning.plan_ends import confident_plan_ends
from kgqa.retrieval.features import PreparedQuestion, to_batch
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.nn import MlpConfig, question_bce
from kgqa.retrieval.models.path_context import with_path_context
from kgqa.retrieval.models.plan_attention import AttentionPlannerConfig, AttentionPlanScorer
from kgqa.retrieval.models.plans import (
    PLAN_FEATURES,
    STEP_MENTIONS,
    Planner,
    PlannerConfig,
    Plans,
    PlanScorer,
    RankedPlans,
    enumerate_plans,
    gold_plans,
    plan_batch,
    rank_plans,
)
from kgqa.retrieval.models.scorer import ScorerBatch, ScorerConfig, TripleScorer
from retriever_training.examples import TrainingExample

Tables = tuple[EntityTable, RelationTable]
C = TypeVar("C", bound=MlpConfig)
Item = TypeVar("Item")  # what _fit trains on: a TrainingExample, or a PlanChoice for the planner


@dataclass(frozen=True, slots=True)
class TrainSettings:
    """Optimisation settings shared by the models, and which optional ones to train.

    The trainer's record (stored in each checkpoint). The keys a user sets are the config's
    ``[train]`` section (:class:`kgqa.config.TrainingSettings`), which holds their defaults and
    reasons; :meth:`from_config` builds this record from it. The rest are the recipe's constants.
    """

    epochs: int = TRAIN_DEFAULTS.epochs
    patience: int = TRAIN_DEFAULTS.patience
    min_epochs: int = 3  # never stop earlier: a first epoch's metric is often already near 1.0
    # Patience counts only gains beyond the validation metric's standard error (_fit); False:
    # every better epoch counts (how kgqa refine's planner judge was measured).
    patience_past_noise: bool = True
    lr: float = 1e-3
    # None: by the training part's size (hidden_for).
    scorer_hidden: int | None = TRAIN_DEFAULTS.hidden
    reader_hidden: int | None = TRAIN_DEFAULTS.hidden
    scorer_layers: int = 1  # SubgraphRAG's reference: Linear -> ReLU -> Linear(hidden, 1)
    reader_layers: int = 2
    recall_k: int = 100
    seed: int = TRAIN_DEFAULTS.seed
    path_scorer: bool = (
        TRAIN_DEFAULTS.path_scorer
    )  # the second-pass scorer (kgqa.retrieval.models.path_context)
    planner: bool = TRAIN_DEFAULTS.planner  # the relation-path planner (kgqa.retrieval.models.plans)
    # Fewest labelled training questions the extractive reader trains on (below: plan ends).
    reader_min_questions: int = TRAIN_DEFAULTS.reader_min_questions
    planner_steps: int = 3  # longest plan
    # mlp (kgqa.retrieval.models.plans), attention (word order, kgqa.retrieval.models.plan_attention) or auto.
    planner_kind: str = TRAIN_DEFAULTS.planner_kind
    # A small training part takes smaller batches (batch_for), so an epoch keeps its steps.
    planner_batch: int = TRAIN_DEFAULTS.planner_batch
    # The torch device the models train on (runtime.device, resolved by kgqa train): the
    # examples stay in host memory and travel to it one batch at a time.
    device: str = "cpu"
    # Questions per optimiser step of the triple scorers and of the reader, their losses
    # averaged (one graph of all of them per pass, ScorerBatch.concat; SubgraphRAG's recipe is
    # one). 4 per scorer step at 6x the learning rate reaches the validation recall of one per
    # step at 1e-3 by the same epoch in 0.65x the CPU; 8 per reader step (at ``lr``) validates as
    # high in 0.77x (docs/decisions.md, issue 31).
    scorer_batch: int = 4
    scorer_lr: float = 6e-3
    reader_batch: int = 8
    # The MLP planner also reads the cosines of each step's relation name with the question
    # (PlannerConfig.name_match): what carries to wording the training never used.
    planner_name_match: bool = True

    @classmethod
    def from_config(cls, train: TrainingSettings) -> TrainSettings:
        """The record for the config's ``[train]`` section (``hidden`` sizes the scorer and the reader)."""
        return cls(
            epochs=train.epochs,
            patience=train.patience,
            scorer_hidden=train.hidden,
            reader_hidden=train.hidden,
            seed=train.seed,
            path_scorer=train.path_scorer,
            planner=train.planner,
            reader_min_questions=train.reader_min_questions,
            planner_kind=train.planner_kind,
            planner_batch=train.planner_batch,
        )


#: An example's model output and loss, or None for one with nothing to learn from (:func:`_fit`).
Scored = tuple[torch.Tensor, torch.Tensor] | None

#: Validation questions per forward pass (:func:`_fit`): the metric of each is that of its own
#: output, so the batch changes only how fast, not what, validation measures.
VAL_BATCH = 64


#: The most a validation gain must exceed to count as progress (:func:`_fit`): on a few dozen
#: validation questions the standard error (~0.07) would hide every one-question step, and the
#: model would stop after ``min_epochs``; on thousands it is far below this.
NOISE_CAP = 0.01


#: Fewest optimiser steps per epoch: below a model's batch (``planner_batch``, ``scorer_batch``,
#: ``reader_batch``) x this many training questions its batch shrinks (:func:`batch_for`).
STEPS_PER_EPOCH = 100


#: Training questions from which the scorers and the reader are narrow (:func:`hidden_for`).
NARROW_FROM = 1000
#: Their widths below and from :data:`NARROW_FROM` training questions.
WIDE_HIDDEN, NARROW_HIDDEN = 256, 128


def hidden_for(hidden: int | None, questions: int) -> int:
    """The MLP width of a scorer or the reader trained on ``questions``: ``hidden`` where set,
    else :data:`NARROW_HIDDEN` from :data:`NARROW_FROM` questions and :data:`WIDE_HIDDEN` below.

    Why by size: the width's cost is the first layer's projection of every entity's text, most
    of the training time, and 128 halves it. On thousands of questions (MetaQA's default recipe,
    PathQuestion, WorldCup2014) 128 held every Hit@1 in 0.65x the time; on the bundled slice's
    200 it answered "Tom Hanks appears in which movies" with the films he directed, where 256
    answers his films (docs/decisions.md, issue 31).
    """
    if hidden is not None:
        return hidden
    return NARROW_HIDDEN if questions >= NARROW_FROM else WIDE_HIDDEN


def batch_for(batch: int, questions: int) -> int:
    """Questions per step for a training part of ``questions``: at most ``batch``, and small
    enough for :data:`STEPS_PER_EPOCH` steps an epoch (so a few hundred questions train with few
    per step, a handful with one, as the batches were measured only on thousands: the bundled
    slice's 200, 10 epochs at 4 and 8 per step and hidden 128, answered "who directed cast away" wrong)."""
    return max(1, min(batch, questions // STEPS_PER_EPOCH))


@dataclass(slots=True)
class History:
    """Per-epoch training loss, validation metric and validation loss; ``best_epoch`` is 1-based.

    ``candidates``: for the planner trained with ``planner_kind="auto"``, each kind's best
    validation plan accuracy (the history is the chosen one's).
    """

    metric: str
    train_loss: list[float] = field(default_factory=list)
    val_metric: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    best_epoch: int = 0
    candidates: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (training and eval entry points only)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def triple_recall_at_k(scores: torch.Tensor, labels: torch.Tensor, k: int) -> float:
    """Share of positive triples among the top-k scores; nan when there is no positive."""
    positives = labels.sum()
    if positives == 0:
        return float("nan")
    top = torch.topk(scores, min(k, scores.numel())).indices
    return float(labels[top].sum() / positives)


def _fit(
    model: nn.Module,
    train: Sequence[Item],
    val: Sequence[Item],
    *,
    scored: Callable[[Sequence[Item]], list[Scored]],
    metric_of: Callable[[Item, torch.Tensor], float],
    metric: str,
    settings: TrainSettings,
    desc: str,
    progress: bool,
    batch_size: int = 1,
    lr: float | None = None,
) -> History:
    """Train ``model`` ``batch_size`` questions per step (their losses averaged), at learning
    rate ``lr`` (``settings.lr`` when None), and keep the best epoch's weights.

    ``scored`` gives each of several examples its model output and loss (None for an example
    with nothing to learn from), in one forward pass where the model batches questions
    (:meth:`~kgqa.retrieval.models.scorer.ScorerBatch.concat`); ``metric_of`` a validation example's
    metric from that same output, so each validation example takes one forward pass, in
    batches of :data:`VAL_BATCH` (a nan metric is left out of the mean). An epoch
    is better than the best so far when its mean validation metric is higher, or equal with a
    lower mean validation loss, and its weights are kept. Patience counts progress, not noise:
    training stops after ``patience`` epochs none of which beat the metric of the last epoch
    that progressed by more than that epoch's standard error of the mean (two epochs on the
    same few thousand questions differ by that much by chance; at most :data:`NOISE_CAP`), but
    not before ``min_epochs``.
    Adam runs its multi-tensor (``foreach``) form: the same
    arithmetic as the per-tensor loop, bit for bit, with less Python per step (the fused form
    is not: it changed the planner's training, docs/decisions.md).
    """
    model.to(settings.device)
    optimiser = torch.optim.Adam(model.parameters(), lr=settings.lr if lr is None else lr, foreach=True)
    order = torch.Generator().manual_seed(settings.seed)
    history = History(metric=metric)
    best_state, best, stale = copy.deepcopy(model.state_dict()), (-1.0, float("-inf")), 0
    progressed = float("-inf")  # the metric of the last epoch that progressed, plus its standard error
    bar = tqdm(range(settings.epochs), desc=desc, disable=not progress, leave=False)
    for epoch in bar:
        model.train()
        losses: list[torch.Tensor] = []
        shuffled = torch.randperm(len(train), generator=order).tolist()
        for start in range(0, len(shuffled), batch_size):
            step = [train[i] for i in shuffled[start : start + batch_size]]
            results = [r for r in scored(step) if r is not None]
            if not results:
                continue
            step_losses = torch.stack([r[1] for r in results])
            optimiser.zero_grad()
            step_losses.mean().backward()
            optimiser.step()
            losses.append(step_losses.detach())
        model.eval()
        metrics: list[float] = []
        val_losses: list[torch.Tensor] = []
        with torch.inference_mode():
            for start in range(0, len(val), VAL_BATCH):
                chunk = val[start : start + VAL_BATCH]
                for ex, result in zip(chunk, scored(chunk), strict=True):
                    if result is not None:
                        metrics.append(metric_of(ex, result[0]))
                        val_losses.append(result[1])
        value = _nanmean(metrics)
        history.train_loss.append(float(torch.cat(losses).mean()) if losses else 0.0)
        history.val_metric.append(value)
        history.val_loss.append(float(torch.stack(val_losses).mean()) if val_losses else 0.0)
        bar.set_postfix(loss=f"{history.train_loss[-1]:.4f}", **{metric: f"{value:.4f}"})
        if (value, -history.val_loss[-1]) > best:
            best, history.best_epoch = (value, -history.val_loss[-1]), epoch + 1
            best_state = copy.deepcopy(model.state_dict())
        if settings.patience_past_noise:
            progress = value > progressed
            if progress:
                progressed = value + min(_standard_error(metrics), NOISE_CAP)
        else:
            progress = history.best_epoch == epoch + 1
        if progress:
            stale = 0
        else:
            stale += 1
            if stale >= settings.patience and epoch + 1 >= settings.min_epochs:
                break
    model.load_state_dict(best_state)
    model.eval()
    return history


def _nanmean(values: list[float]) -> float:
    kept = [v for v in values if v == v]
    return sum(kept) / len(kept) if kept else 0.0


def _standard_error(values: list[float]) -> float:
    """Standard error of the mean of the non-nan ``values`` (0 for fewer than two)."""
    kept = [v for v in values if v == v]
    if len(kept) < 2:
        return 0.0
    return float(np.std(kept, ddof=1)) / len(kept) ** 0.5


def _config(cls: type[C], examples: Sequence[TrainingExample], *, hidden: int, layers: int) -> C:
    """A model config whose input widths come from the data (embedding size, DDE width)."""
    first = examples[0].prepared
    return cls(
        emb_dim=int(first.question_emb.numel()), dde_dim=int(first.dde.size(1)), hidden=hidden, layers=layers
    )


def train_scorer(
    train: Sequence[TrainingExample],
    val: Sequence[TrainingExample],
    tables: Tables,
    settings: TrainSettings,
    *,
    progress: bool = True,
) -> tuple[TripleScorer, History]:
    """Train the triple scorer on weak labels; early stopping on validation triple recall@k."""
    seed_everything(settings.seed)
    model = TripleScorer(
        _config(
            ScorerConfig,
            train,
            hidden=hidden_for(settings.scorer_hidden, len(train)),
            layers=settings.scorer_layers,
        )
    )
    labelled = {id(ex): bool(ex.labels.any()) for ex in [*train, *val]}
    batch = batch_for(settings.scorer_batch, len(train))

    def scored(examples: Sequence[TrainingExample]) -> list[Scored]:
        kept = [ex for ex in examples if labelled[id(ex)]]
        if not kept:
            return [None] * len(examples)
        batch = ScorerBatch.concat([to_batch(ex.prepared, tables) for ex in kept]).to(settings.device)
        logits = model(batch)
        labels = torch.cat([ex.labels for ex in kept]).to(settings.device)
        losses = question_bce(logits, labels, batch.question_of_triples(), len(kept))
        outputs = logits.split([ex.prepared.subgraph.num_triples for ex in kept])
        return _aligned(examples, kept, list(zip(outputs, losses, strict=True)))

    def metric_of(ex: TrainingExample, logits: torch.Tensor) -> float:
        return triple_recall_at_k(logits, ex.labels.to(logits.device), settings.recall_k)

    history = _fit(
        model,
        train,
        val,
        scored=scored,
        metric_of=metric_of,
        metric=f"recall@{settings.recall_k}",
        settings=settings,
        desc="triple scorer",
        progress=progress,
        batch_size=batch,
        # The rate grows with the batch (the linear scaling rule): scorer_lr is that of scorer_batch.
        lr=settings.scorer_lr * batch / settings.scorer_batch,
    )
    return model, history


def _aligned(examples: Sequence[Item], kept: Sequence[Item], results: Sequence[Scored]) -> list[Scored]:
    """``results`` of ``kept`` (a subsequence of ``examples``) at their places, None elsewhere."""
    by_example = {id(ex): r for ex, r in zip(kept, results, strict=True)}
    return [by_example.get(id(ex)) for ex in examples]


def path_contexts(
    examples: Sequence[TrainingExample], tables: Tables, scorer: TripleScorer
) -> dict[int, PreparedQuestion]:
    """Each example's prepared question with ``scorer``'s reach columns appended
    (:func:`~kgqa.retrieval.models.path_context.with_path_context`), by ``id(example)``: computed once,
    read by the second-pass scorer's training and by the reader's triple scores."""
    with torch.inference_mode():
        probabilities = _probabilities(scorer, [ex.prepared for ex in examples], tables)
        return {
            id(ex): with_path_context(ex.prepared, p) for ex, p in zip(examples, probabilities, strict=True)
        }


def _probabilities(
    scorer: TripleScorer, prepared: Sequence[PreparedQuestion], tables: Tables
) -> list[torch.Tensor]:
    """``sigmoid`` of ``scorer``'s logits [E] for each of ``prepared``, :data:`VAL_BATCH`
    questions per pass on the scorer's device (the same per question as one at a time, in fewer
    operations), back in host memory beside the examples."""
    out: list[torch.Tensor] = []
    device = model_device(scorer)
    for start in range(0, len(prepared), VAL_BATCH):
        chunk = prepared[start : start + VAL_BATCH]
        logits = scorer(ScorerBatch.concat([to_batch(p, tables) for p in chunk]).to(device))
        out += torch.sigmoid(logits).cpu().split([p.subgraph.num_triples for p in chunk])
    return out


def train_path_scorer(
    train: Sequence[TrainingExample],
    val: Sequence[TrainingExample],
    scorer: TripleScorer,
    tables: Tables,
    settings: TrainSettings,
    *,
    progress: bool = True,
    contexts: Mapping[int, PreparedQuestion] | None = None,
) -> tuple[TripleScorer, History]:
    """Train the second-pass scorer on the same labels, its DDE extended with the first pass's reach
    (``contexts`` from :func:`path_contexts`, computed here when not given)."""
    if contexts is None:
        contexts = path_contexts([*train, *val], tables, scorer)

    def extended(examples: Sequence[TrainingExample]) -> list[TrainingExample]:
        return [replace(ex, prepared=contexts[id(ex)]) for ex in examples]

    return train_scorer(extended(train), extended(val), tables, settings, progress=progress)


@dataclass(frozen=True, slots=True)
class PlanChoice:
    """One question's plans, as the planner reads them: the question's views and (built
    ``with_tokens``) token states, its relations' embeddings, its plans' steps
    (:attr:`~kgqa.retrieval.models.plans.Plans.steps`) and which plans are gold. Tensors only, so a
    planner can train on them in another process (:mod:`retriever_training.planner_process`)."""

    views: torch.Tensor
    tokens: torch.Tensor | None
    relation_emb: torch.Tensor
    steps: torch.Tensor
    gold: torch.Tensor


def example_plans(examples: Sequence[TrainingExample], max_steps: int) -> dict[int, Plans]:
    """Each example's plans (:func:`~kgqa.retrieval.models.plans.enumerate_plans`, at most ``max_steps``
    and the example's hops long, as :func:`~kgqa.retrieval.models.plans.rank_plans` enumerates them), by
    ``id(example)``: enumerated once, read by the planner's training and the reader's plan columns."""
    return {
        id(ex): enumerate_plans(ex.prepared.subgraph, min(max_steps, ex.prepared.hops)) for ex in examples
    }


def _plan_choice(ex: TrainingExample, tables: Tables, plans: Plans) -> PlanChoice | None:
    sub = ex.prepared.subgraph
    gold = gold_plans(plans, sub, ex.answers, ex.example.relation_paths)
    if not gold.any():
        return None
    prepared = ex.prepared
    relation_emb = tables[1].matrix[prepared.relation_rows]
    return PlanChoice(prepared.question_views, prepared.question_tokens, relation_emb, plans.steps, gold)


#: What ``TrainSettings.planner_kind`` may name.
PLANNER_CHOICES = ("mlp", "attention", "auto")


@dataclass(frozen=True, slots=True)
class PlannerTask:
    """Everything the planner's training reads (:func:`planner_task`): each training and
    validation question's :class:`PlanChoice` (None for a question with no gold plan in its
    subgraph, kept so the epochs' shuffles do not depend on how many there are), which planner
    kinds to train, the question embedding's width, the settings and the early-stopping metric."""

    train: list[PlanChoice | None]
    val: list[PlanChoice | None]
    kinds: tuple[str, ...]
    emb_dim: int
    settings: TrainSettings
    metric: Literal["plan_hit@1", "gold_mass"]


def planner_task(
    train: Sequence[TrainingExample],
    val: Sequence[TrainingExample],
    tables: Tables,
    settings: TrainSettings,
    *,
    metric: Literal["plan_hit@1", "gold_mass"] = "plan_hit@1",
    plans: Mapping[int, Plans] | None = None,
) -> PlannerTask:
    """The planner's training on ``train`` and ``val`` (:func:`train_planner` has the contract);
    ``plans``: :func:`example_plans` of both at ``settings.planner_steps``, enumerated here when
    not given."""
    if settings.planner_kind not in PLANNER_CHOICES:
        raise ValueError(f"planner_kind must be one of {PLANNER_CHOICES}, got {settings.planner_kind!r}")
    if plans is None:
        plans = example_plans([*train, *val], settings.planner_steps)
    first = train[0].prepared
    has_tokens = first.question_tokens is not None
    kinds: tuple[str, ...] = (settings.planner_kind,)
    if settings.planner_kind == "auto":
        kinds = ("mlp", "attention") if has_tokens else ("mlp",)
    if "attention" in kinds and not has_tokens:
        raise ConfigError(
            "the word-order planner needs the questions' token states",
            hint="build the examples with_tokens (kgqa train does for --planner-kind attention)",
        )
    train_choices, val_choices = (
        [_plan_choice(ex, tables, plans[id(ex)]) for ex in part] for part in (train, val)
    )
    emb_dim = int(first.question_emb.numel())
    return PlannerTask(train_choices, val_choices, kinds, emb_dim, settings, metric)


def train_planner(
    train: Sequence[TrainingExample],
    val: Sequence[TrainingExample],
    tables: Tables,
    settings: TrainSettings,
    *,
    progress: bool = True,
    metric: Literal["plan_hit@1", "gold_mass"] = "plan_hit@1",
    plans: Mapping[int, Plans] | None = None,
) -> tuple[Planner, History]:
    """Train the relation-path planner: softmax over each question's plans, maximising the
    probability of its gold plans (:func:`~kgqa.retrieval.models.plans.gold_plans`); early stopping on
    how often the top plan is gold, or on the mean probability of the gold plans (refinement,
    :mod:`retriever_training.refine`: its validation top plan is right from the first epoch, and a
    tie never moves early stopping past it). Questions with no gold plan in their subgraph are skipped.

    ``settings.planner_kind`` picks the model; ``auto`` trains the MLP and the word-order planner
    and keeps the one with the better best validation accuracy (the MLP on a tie), recording
    both in ``History.candidates``. The word-order planner needs examples built ``with_tokens``;
    without token states ``auto`` trains the MLP only. ``plans``: :func:`example_plans` of
    ``train`` and ``val`` at ``settings.planner_steps``, enumerated here when not given.
    """
    task = planner_task(train, val, tables, settings, metric=metric, plans=plans)
    return run_planner_task(task, progress=progress)


def run_planner_task(task: PlannerTask, *, progress: bool) -> tuple[Planner, History]:
    """Train ``task``'s planner kinds and keep the best (:func:`train_planner`)."""
    trained = {kind: _train_planner_kind(kind, task, progress) for kind in task.kinds}
    best = max(task.kinds, key=lambda k: (max(trained[k][1].val_metric, default=0.0), k == "mlp"))
    model, history = trained[best]
    if len(task.kinds) > 1:
        history.candidates = {k: max(h.val_metric, default=0.0) for k, (_, h) in trained.items()}
    return model, history


def _new_planner(kind: str, emb_dim: int, settings: TrainSettings) -> Planner:
    max_steps = settings.planner_steps
    if kind == "mlp":
        mentions = min(STEP_MENTIONS, max_steps)
        config = PlannerConfig(
            emb_dim=emb_dim,
            max_steps=max_steps,
            step_mentions=mentions,
            name_match=settings.planner_name_match,
        )
        return PlanScorer(config)
    return AttentionPlanScorer(AttentionPlannerConfig(emb_dim=emb_dim, max_steps=max_steps))


def _train_planner_kind(kind: str, task: PlannerTask, progress: bool) -> tuple[Planner, History]:
    settings = task.settings
    seed_everything(settings.seed)
    model = _new_planner(kind, task.emb_dim, settings)

    def scored(choices: Sequence[PlanChoice | None]) -> list[Scored]:
        if kind == "mlp":
            return _plans_scored_together(model, choices, settings.device)  # type: ignore[arg-type]
        return _plans_scored_alone(model, choices, settings.device, tokens=True)

    def metric_of(choice: PlanChoice | None, logits: torch.Tensor) -> float:
        gold = choice.gold.to(logits.device)  # type: ignore[union-attr]  # scored: only with a choice
        if task.metric == "gold_mass":
            return float(torch.softmax(logits, 0)[gold].sum())
        return float(gold[int(torch.argmax(logits))])

    history = _fit(
        model,
        task.train,
        task.val,
        scored=scored,
        metric_of=metric_of,
        metric=task.metric,
        settings=settings,
        desc=f"planner ({kind})",
        progress=progress,
        batch_size=batch_for(settings.planner_batch, len(task.train)),
    )
    return model, history


def _plans_scored_alone(
    model: Planner, choices: Sequence[PlanChoice | None], device: str, *, tokens: bool = False
) -> list[Scored]:
    """Each choice's plan logits and loss (the log-softmax of its gold plans' mass), one pass
    per question (None stays None); the word-order planner reads the question's token states
    (``tokens``), the MLP its views."""
    results: list[Scored] = []
    for choice in choices:
        if choice is None:
            results.append(None)
            continue
        question = choice.tokens if tokens else choice.views
        if question is not None:  # None: the model says what it lacks (planner_task checks first)
            question = question.to(device)
        logits = model(question, choice.relation_emb.to(device), choice.steps.to(device))
        results.append(
            (logits, torch.logsumexp(logits, 0) - torch.logsumexp(logits[choice.gold.to(device)], 0))
        )
    return results


def _plans_scored_together(
    model: PlanScorer, choices: Sequence[PlanChoice | None], device: str
) -> list[Scored]:
    """Each choice's plan logits and loss (the log-softmax of its gold plans' mass), all
    questions in one :meth:`~kgqa.retrieval.models.plans.PlanScorer.forward_batch` (None stays
    None): the numbers of :func:`_plans_scored_alone`, in a few dozen kernels instead of a few
    dozen per question, which is what a GPU step costs (docs/decisions.md)."""
    kept = [c for c in choices if c is not None]
    if not kept:
        return [None] * len(choices)
    counts = [c.steps.shape[0] for c in kept]
    views, relation_emb, steps, plan_question = plan_batch(
        [c.views.to(device) for c in kept], [c.relation_emb for c in kept], [c.steps for c in kept]
    )
    offsets = torch.tensor([0, *counts[:-1]], device=steps.device).cumsum(0)
    cells = (plan_question, torch.arange(steps.shape[0], device=steps.device) - offsets[plan_question])
    logits = model.forward_batch(views, relation_emb, steps, plan_question)
    # Per question: logsumexp over its plans minus over its gold plans, as padded [B, P] tables.
    gold = torch.cat([c.gold for c in kept]).to(device)
    empty = logits.new_full((len(kept), max(counts)), float("-inf"))
    table = empty.index_put(cells, logits)
    gold_table = empty.index_put(cells, logits.masked_fill(~gold, float("-inf")))
    losses = torch.logsumexp(table, 1) - torch.logsumexp(gold_table, 1)
    per_question = iter(zip(logits.split(counts), losses, strict=True))
    return [None if c is None else next(per_question) for c in choices]


def train_reader(
    train: Sequence[TrainingExample],
    val: Sequence[TrainingExample],
    scorer: TripleScorer,
    tables: Tables,
    settings: TrainSettings,
    *,
    path_scorer: TripleScorer | None = None,
    planner: Planner | None = None,
    progress: bool = True,
    contexts: Mapping[int, PreparedQuestion] | None = None,
    plans: Mapping[int, Plans] | None = None,
) -> tuple[EntityReader, History]:
    """Train the extractive reader's entity scorer on answer labels; early stopping on Hit@1,
    then its answer threshold chosen for the best mean F1 on ``val`` (whole answer sets) among
    the entities it will answer from: a sure plan's ends where ``planner`` is sure of one
    (:func:`~kgqa.reasoning.plan_ends.confident_plan_ends`, as ``answer.plan_answers`` reads).
    Over every entity instead, the other plans' ends pushed the threshold up (0.3-0.65 on
    WebQSP-evidence) where the reader keeps to a sure plan's, and answer sets came out short
    (docs/decisions.md).

    Its triple scores come from ``scorer`` refined by ``path_scorer``, and its plan columns from
    ``planner``, as at retrieval time. ``contexts`` (:func:`path_contexts` of ``scorer``) and
    ``plans`` (:func:`example_plans` at the planner's ``max_steps``) spare recomputing what the
    second-pass scorer's and the planner's training already computed.
    """
    seed_everything(settings.seed)
    config = _config(
        ReaderConfig,
        train,
        hidden=hidden_for(settings.reader_hidden, len(train)),
        layers=settings.reader_layers,
    )
    model = EntityReader(replace(config, plan_dim=len(PLAN_FEATURES) if planner else 0))
    examples = [*train, *val]
    # no_grad, not inference_mode: the reader's relation context multiplies these scores with
    # weights that train, and autograd must keep them.
    with torch.no_grad():
        if path_scorer is not None:
            if contexts is None:
                contexts = path_contexts(examples, tables, scorer)
            probabilities = _probabilities(path_scorer, [contexts[id(ex)] for ex in examples], tables)
        else:
            probabilities = _probabilities(scorer, [ex.prepared for ex in examples], tables)
        triple_probs = {id(ex): p for ex, p in zip(examples, probabilities, strict=True)}
        ranked: dict[int, RankedPlans] = {}
        columns: dict[int, torch.Tensor | None] = {id(ex): None for ex in examples}
        if planner is not None:
            if plans is None:
                plans = example_plans(examples, planner.config.max_steps)
            ranked = {id(ex): rank_plans(planner, ex.prepared, tables, plans[id(ex)]) for ex in examples}
            columns = {id(ex): ranked[id(ex)].reach(ex.prepared.subgraph.num_entities) for ex in examples}
        # The weight-free columns, once per question instead of once an epoch (reader_features).
        features = {
            id(ex): reader_features(
                triple_probs[id(ex)],
                to_batch(ex.prepared, tables),
                ex.prepared.subgraph.topic,
                columns[id(ex)],
            )
            for ex in examples
        }
    candidates = {id(ex): ex.prepared.subgraph.candidate_mask() for ex in examples}
    answered = {id(ex): bool(ex.answers.any()) for ex in examples}

    def logits_of(examples: Sequence[TrainingExample]) -> tuple[torch.Tensor, ScorerBatch]:
        """The entity logits of ``examples`` in one pass, and their batch."""
        device = settings.device
        batch = ScorerBatch.concat([to_batch(ex.prepared, tables) for ex in examples]).to(device)
        probs = torch.cat([triple_probs[id(ex)] for ex in examples]).to(device)
        joined = ReaderFeatures.concat([features[id(ex)] for ex in examples]).to(device)
        return model.from_features(batch, probs, joined), batch

    def scored(examples: Sequence[TrainingExample]) -> list[Scored]:
        kept = [ex for ex in examples if answered[id(ex)]]
        if not kept:
            return [None] * len(examples)
        logits, batch = logits_of(kept)
        mask = torch.cat([candidates[id(ex)] for ex in kept]).to(settings.device)
        answers = torch.cat([ex.answers for ex in kept]).to(settings.device, torch.float)
        losses = question_bce(logits[mask], answers[mask], batch.question_of_entities()[mask], len(kept))
        outputs = logits.split([ex.prepared.subgraph.num_entities for ex in kept])
        return _aligned(examples, kept, list(zip(outputs, losses, strict=True)))

    def metric_of(ex: TrainingExample, logits: torch.Tensor) -> float:
        masked = logits.masked_fill(~candidates[id(ex)].to(logits.device), float("-inf"))
        return float(ex.answers[int(torch.argmax(masked))])

    history = _fit(
        model,
        train,
        val,
        scored=scored,
        metric_of=metric_of,
        metric="hit@1",
        settings=settings,
        desc="extractive reader",
        progress=progress,
        batch_size=batch_for(settings.reader_batch, len(train)),
    )
    model.eval()
    with torch.inference_mode():
        answer_sets = []
        for start in range(0, len(val), VAL_BATCH):
            chunk = val[start : start + VAL_BATCH]
            for ex, result in zip(chunk, scored(chunk), strict=True):
                if result is not None:
                    # where the reader will answer: among a plan the planner is sure of (answer.plan_answers)
                    named = tables[0].has_text[ex.prepared.entity_rows]
                    plans_of = ranked.get(id(ex))
                    allowed = confident_plan_ends(plans_of, candidates[id(ex)], ex.prepared.subgraph, named)
                    entity_probs = torch.sigmoid(result[0].cpu()).masked_fill(~allowed, -1.0)
                    answer_sets.append((entity_probs, ex.answers))
    model.config = replace(model.config, answer_threshold=calibrate_threshold(answer_sets))
    return model, history
