"""Training on a device (``TrainSettings.device``, from ``runtime.device``): the same seed gives
the same models on the CPU and on CUDA, within float tolerance (CUDA sums in another order).

Why one epoch for the weights: Adam divides each step by the gradient's own running scale, so a
weight whose gradient is float noise (a flat direction of the loss) moves by the learning rate
whichever sign the noise has, and such differences grow over epochs (docs/decisions.md). After
one epoch the scorers' and the reader's weights are compared; the planner's already differ there
(its softmax over a question's plans ignores a shift of all its logits: inputs moved by 1e-6 on
the CPU moved its weights by 4e-3), so its plan probabilities are. Over the whole run, what the
models are chosen and judged by: the validation histories and best epochs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import torch
from conftest import FakeEmbedder, toy_examples

from kgqa.config import load_config
from kgqa.device import resolve_device
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.store.kglite_store import KgliteStore
from retriever_training.examples import build_examples
from retriever_training.train import (
    TrainSettings,
    _plans_scored_alone,
    planner_task,
    train_path_scorer,
    train_planner,
    train_reader,
    train_scorer,
)

SETTINGS = TrainSettings(epochs=6, patience=6, scorer_hidden=16, reader_hidden=16, recall_k=2, seed=0)


def _train_all(store: KgliteStore, embedder: FakeEmbedder, device: str, epochs: int) -> dict[str, Any]:
    """Every model of ``kgqa train`` on the toy questions, trained ``epochs`` on ``device``: the
    scorers' and the reader's state dicts (on the CPU), the planner's plan probabilities on the
    validation questions, and every model's validation history."""
    tables = (EntityTable(store, embedder.dimension), RelationTable(store))
    examples = build_examples(store, embedder, toy_examples(), tables, SubgraphSettings(hops=2))
    settings = replace(SETTINGS, device=device, epochs=epochs, patience=epochs)
    scorer, scorer_history = train_scorer(examples, examples, tables, settings, progress=False)
    path_scorer, path_history = train_path_scorer(
        examples, examples, scorer, tables, settings, progress=False
    )
    planner, planner_history = train_planner(examples, examples, tables, settings, progress=False)
    reader, reader_history = train_reader(
        examples, examples, scorer, tables, settings, path_scorer=path_scorer, planner=planner, progress=False
    )
    models = {"scorer": scorer, "path_scorer": path_scorer, "reader": reader}
    states = {name: {k: v.cpu() for k, v in m.state_dict().items()} for name, m in models.items()}
    histories = {
        "scorer": scorer_history,
        "path_scorer": path_history,
        "planner": planner_history,
        "reader": reader_history,
    }
    choices = planner_task(examples, examples, tables, settings).val
    with torch.no_grad():
        plans = [torch.softmax(r[0], 0).cpu() for r in _plans_scored_alone(planner, choices, device) if r]
    return {"states": states, "histories": histories, "plans": plans}


def test_runtime_device_defaults_to_auto_and_resolves() -> None:
    settings = load_config(environ={}).settings
    assert settings.runtime.device == "auto"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device(settings.runtime.device).type == expected


def test_training_on_the_cpu_device_is_the_default_training(toy_kg: KgliteStore) -> None:
    embedder = FakeEmbedder()
    tables = (EntityTable(toy_kg, embedder.dimension), RelationTable(toy_kg))
    examples = build_examples(toy_kg, embedder, toy_examples(), tables, SubgraphSettings(hops=2))
    default, _ = train_scorer(examples, examples, tables, SETTINGS, progress=False)
    on_cpu, _ = train_scorer(examples, examples, tables, replace(SETTINGS, device="cpu"), progress=False)
    for (name, a), b in zip(default.state_dict().items(), on_cpu.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


@pytest.mark.gpu
def test_cuda_training_gives_the_cpu_models_within_tolerance(toy_kg: KgliteStore) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    embedder = FakeEmbedder()
    cpu, cuda = _train_all(toy_kg, embedder, "cpu", 1), _train_all(toy_kg, embedder, "cuda", 1)
    for model, state in cpu["states"].items():
        for name, weights in state.items():
            torch.testing.assert_close(
                cuda["states"][model][name],
                weights,
                rtol=1e-3,
                atol=1e-4,
                msg=lambda m, at=f"{model}.{name}": f"{at}: {m}",
            )
    assert len(cuda["plans"]) == len(cpu["plans"]) > 0
    for on_cuda, on_cpu in zip(cuda["plans"], cpu["plans"], strict=True):
        torch.testing.assert_close(on_cuda, on_cpu, atol=1e-3, rtol=0)
    cpu = _train_all(toy_kg, embedder, "cpu", SETTINGS.epochs)
    cuda = _train_all(toy_kg, embedder, "cuda", SETTINGS.epochs)
    for model, history in cpu["histories"].items():
        on_cuda = cuda["histories"][model]
        assert on_cuda.best_epoch == history.best_epoch, model
        assert on_cuda.val_metric == pytest.approx(history.val_metric, abs=1e-6), model
        assert on_cuda.val_loss == pytest.approx(history.val_loss, rel=1e-2, abs=1e-4), model
