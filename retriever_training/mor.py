"""``kgqa train --format stark``: train MoR's planner and trajectory reranker, save one checkpoint.

1. The store's schema is read from the store; every valid plan is enumerated.
2. Planner: each training question's gold ``metapath`` (source type and relation names, mapped
   to the store's labels and relationship types as ingest names them) is its target among the
   enumerated plans; softmax cross-entropy over all plans, full batch, early stopping on
   validation accuracy. Span cues are learnt from the gold ``text_constraint`` spans.
3. Reranker: the trained planner and traversal run on every question once; the candidates'
   features are cached and a listwise loss is minimised, early stopping on validation MRR.

Deterministic: fixed seed, full-batch or fixed-order updates, no sampling.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from kgqa.checkpoint_file import save_checkpoint
from kgqa.config import Settings
from kgqa.device import resolve_device
from kgqa.embed import make_embedder
from kgqa.embed.protocol import Embedder
from kgqa.errors import ConfigError
from kgqa.eval.metrics import mean_stark, stark_scores
from kgqa.retrieval.mor.plan import Metapath, enumerate_plans, store_metapath, validate
from kgqa.retrieval.mor.planner import MetapathScorer, PlannerConfig, learn_cues
from kgqa.retrieval.mor.reranker import (
    RerankerConfig,
    TrajectoryReranker,
    features,
    heuristic_scores,
    listwise_loss,
    plan_mixture,
)
from kgqa.retrieval.mor.retriever import MorModel, MorRetriever
from kgqa.retrieval.mor.traversal import read_schema
from kgqa.store import open_store
from kgqa.store.protocol import GraphStore
from kgqa.types import QAExample


@dataclass(frozen=True, slots=True)
class MorTrainSettings:
    """Epoch budgets, patience and seed of MoR training."""

    planner_epochs: int = 200
    reranker_epochs: int = 60
    patience: int = 10
    hidden: int = 32
    seed: int = 0
    # The torch device the planner and the reranker train on (runtime.device, resolved by
    # run_mor_training); they come back on the CPU, where MoR answers: a question's inputs are a
    # softmax over its plans and [N, 9] features, far below the cost of a trip to a device.
    device: str = "cpu"


@dataclass(slots=True)
class MorTrainReport:
    """What MoR training did (also ``kgqa train --json`` output)."""

    out: str
    questions: dict[str, int] = field(default_factory=dict)
    plans: int = 0
    planner_val_accuracy: float = 0.0
    reranker_val: dict[str, float] = field(default_factory=dict)
    heuristic_val: dict[str, float] = field(default_factory=dict)
    best_epoch: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _gold_index(examples: Sequence[QAExample], model_plans: Sequence[Metapath], schema: Any) -> list[int]:
    index = {p.key: i for i, p in enumerate(model_plans)}
    gold = []
    for ex in examples:
        if not ex.metapath:
            raise ConfigError(
                f"question {ex.qid} has no metapath", hint="the planner learns from the metapath column"
            )
        plan = store_metapath(ex.metapath)
        problems = validate(plan, schema)
        if problems or plan.key not in index:
            raise ConfigError(f"question {ex.qid}: its metapath does not fit the store: {problems or plan}")
        gold.append(index[plan.key])
    return gold


def train_planner(
    model: MorModel,
    q_train: tuple[torch.Tensor, torch.Tensor],
    gold_train: list[int],
    q_val: tuple[torch.Tensor, torch.Tensor],
    gold_val: list[int],
    settings: MorTrainSettings,
) -> float:
    """Fit ``model.planner`` in place (full batch, ``planner_epochs`` epochs, the state with the best
    validation accuracy kept; it stops early only once validation is perfect and has not moved
    for ``patience`` epochs); returns that accuracy."""
    device = settings.device
    planner = model.planner.to(device)
    opt = torch.optim.Adam(planner.parameters(), lr=1e-2)
    q_train = (q_train[0].to(device), q_train[1].to(device))
    q_val = (q_val[0].to(device), q_val[1].to(device))
    plan_matrix = model.plan_matrix.to(device)
    y, y_val = torch.tensor(gold_train, device=device), torch.tensor(gold_val, device=device)
    best, best_state, waited = -1.0, copy.deepcopy(planner.state_dict()), 0
    for _ in range(settings.planner_epochs):
        planner.train()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(planner(*q_train, plan_matrix), y)
        loss.backward()
        opt.step()
        planner.eval()
        with torch.no_grad():
            acc = float((planner(*q_val, plan_matrix).argmax(1) == y_val).float().mean())
        if acc > best:
            best, best_state, waited = acc, copy.deepcopy(planner.state_dict()), 0
        else:
            waited += 1
            if waited > settings.patience and best == 1.0:
                break
    planner.load_state_dict(best_state)
    planner.to("cpu").eval()
    return best


@dataclass(frozen=True, slots=True)
class _Run:
    """One executed plan of a question: its candidates' features [N, F], gold mask [N], ids, and
    the plan's weight among the question's plans."""

    x: torch.Tensor
    positive: torch.Tensor
    ids: list[str]
    weight: float


@dataclass(frozen=True, slots=True)
class _Question:
    runs: list[_Run]
    gold: tuple[str, ...]


def _prepare(
    retriever: MorRetriever, examples: Sequence[QAExample], *, progress: bool, desc: str
) -> list[_Question]:
    out = []
    for ex in tqdm(examples, desc=desc, disable=not progress, leave=False):
        runs, _ = retriever.candidates(ex.question)
        gold = set(ex.answers)
        out.append(
            _Question(
                [
                    _Run(
                        features(r.candidates, chains=len(r.plan.chains), plan_prob=r.prob),
                        torch.tensor([c.id in gold for c in r.candidates], dtype=torch.bool),
                        [c.id for c in r.candidates],
                        r.weight,
                    )
                    for r in runs
                    if r.candidates
                ],
                ex.answers,
            )
        )
    return out


def _evaluate(
    questions: Sequence[_Question], score: Callable[[torch.Tensor], torch.Tensor]
) -> dict[str, float]:
    """STaRK metrics of ranking each question's runs by ``score``, mixed over its plans as
    :meth:`MorRetriever.rank` mixes them."""
    results = []
    for q in questions:
        with torch.no_grad():
            mixture = plan_mixture([(r.ids, score(r.x).cpu(), r.weight) for r in q.runs])
        ranked = [i for i, _ in sorted(mixture.items(), key=lambda p: (-p[1], p[0]))]
        results.append(stark_scores(ranked, q.gold))
    return mean_stark(results)


def train_reranker(
    train: Sequence[_Question], val: Sequence[_Question], settings: MorTrainSettings
) -> tuple[TrajectoryReranker, dict[str, float], int]:
    """Fit the reranker (listwise over one plan's candidates per step, in file order; runs
    without a gold candidate skipped); best by validation MRR."""
    torch.manual_seed(settings.seed)
    device = settings.device
    model = TrajectoryReranker(RerankerConfig(hidden=settings.hidden)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    # Each run's features and gold mask travel to the device once, not once an epoch.
    usable = [
        replace(r, x=r.x.to(device), positive=r.positive.to(device))
        for q in train
        for r in q.runs
        if bool(r.positive.any())
    ]
    val = [replace(q, runs=[replace(r, x=r.x.to(device)) for r in q.runs]) for q in val]
    best: dict[str, float] = {"mrr": -1.0}
    best_state, best_epoch, waited = copy.deepcopy(model.state_dict()), 0, 0
    for epoch in range(1, settings.reranker_epochs + 1):
        model.train()
        for r in usable:
            opt.zero_grad()
            listwise_loss(model(r.x), r.positive).backward()
            opt.step()
        model.eval()
        metrics = _evaluate(val, model)
        if metrics["mrr"] > best["mrr"]:
            best, best_state, best_epoch, waited = metrics, copy.deepcopy(model.state_dict()), epoch, 0
        else:
            waited += 1
            if waited >= settings.patience:
                break
    model.load_state_dict(best_state)
    return model.to("cpu").eval(), best, best_epoch


def train_mor(
    store: GraphStore,
    embedder: Embedder,
    train_examples: Sequence[QAExample],
    val_examples: Sequence[QAExample],
    report: MorTrainReport,
    *,
    train_settings: MorTrainSettings,
    progress: bool,
) -> MorModel:
    """Train the planner and the reranker on ``store``; fills ``report`` as it goes."""
    torch.manual_seed(train_settings.seed)
    started = time.perf_counter()
    schema = read_schema(store)
    plans = enumerate_plans(schema)
    planner = MetapathScorer(PlannerConfig.for_plans(plans, emb_dim=embedder.dimension, types=schema.labels))
    cues = learn_cues([(e.question, e.text_constraints[0]) for e in train_examples if e.text_constraints])
    model = MorModel(schema, cues, planner, None, embedder.model_id)
    report.plans = len(model.plans)
    gold_train = _gold_index(train_examples, model.plans, schema)
    model.described_types = frozenset(t for i in gold_train for t in model.plans[i].described())
    gold_val = _gold_index(val_examples, model.plans, schema)
    retriever = MorRetriever(store, embedder, model)
    q_train = _planner_inputs(retriever, train_examples, progress=progress, desc="linking train")
    q_val = _planner_inputs(retriever, val_examples, progress=progress, desc="linking val")
    report.planner_val_accuracy = train_planner(model, q_train, gold_train, q_val, gold_val, train_settings)
    report.seconds["planner"] = time.perf_counter() - started
    started = time.perf_counter()
    train_q = _prepare(retriever, train_examples, progress=progress, desc="traversing train")
    val_q = _prepare(retriever, val_examples, progress=progress, desc="traversing val")
    report.seconds["traverse"] = time.perf_counter() - started
    started = time.perf_counter()
    report.heuristic_val = _evaluate(val_q, heuristic_scores)
    model.reranker, report.reranker_val, report.best_epoch = train_reranker(train_q, val_q, train_settings)
    report.seconds["reranker"] = time.perf_counter() - started
    return model


def run_mor_training(
    settings: Settings,
    train_examples: Sequence[QAExample],
    val_examples: Sequence[QAExample],
    out: Path,
    *,
    train_settings: MorTrainSettings,
    progress: bool,
) -> MorTrainReport:
    """Train MoR on the configured store and embedder and write the checkpoint ``out``."""
    report = MorTrainReport(out=str(out), questions={"train": len(train_examples), "val": len(val_examples)})
    train_settings = replace(train_settings, device=str(resolve_device(settings.runtime.device)))
    embedder = make_embedder(settings.embedder)
    with open_store(settings.store) as store:
        model = train_mor(
            store,
            embedder,
            train_examples,
            val_examples,
            report,
            train_settings=train_settings,
            progress=progress,
        )
    save_checkpoint({**model.checkpoint(), "report": report.to_dict()}, out)
    return report


def _planner_inputs(
    retriever: MorRetriever, examples: Sequence[QAExample], *, progress: bool, desc: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """The planner's inputs for each question: embeddings [B, d] and linked types [B, T]."""
    planner = retriever.model.planner
    readings = [
        retriever.read(e.question) for e in tqdm(examples, desc=desc, disable=not progress, leave=False)
    ]
    return torch.stack([r.vector for r in readings]), torch.stack(
        [planner.linked_types(r.topic_types) for r in readings]
    )
