"""The planner trained in a second process equals the one trained in this process, the child's
errors reach the parent, and ``kgqa train`` uses the second process only where its thread
budget holds two training threads."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import retriever_training.run
from kgqa.cli import cli
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.store.kglite_store import KgliteStore
from retriever_training.examples import build_examples
from retriever_training.planner_process import PlannerProcess
from retriever_training.train import PlannerTask, TrainSettings, planner_task, run_planner_task
from tests.conftest import FakeEmbedder, toy_examples


@pytest.fixture
def task(toy_kg: KgliteStore, fake_embedder: FakeEmbedder) -> PlannerTask:
    tables = (EntityTable(toy_kg, fake_embedder.dimension), RelationTable(toy_kg))
    examples = build_examples(toy_kg, fake_embedder, toy_examples(), tables, SubgraphSettings(hops=2))
    settings = TrainSettings(epochs=6, patience=6, seed=3)
    return planner_task(examples[:6], examples[6:], tables, settings)


def test_a_planner_trained_in_a_child_process_equals_one_trained_here(task: PlannerTask) -> None:
    here, here_history = run_planner_task(task, progress=False)
    with PlannerProcess(task, torch.get_num_threads()) as process:
        there, there_history, seconds = process.result()
    assert seconds > 0
    assert there_history.val_metric == here_history.val_metric
    assert there_history.best_epoch == here_history.best_epoch
    here_state, there_state = here.state_dict(), there.state_dict()
    assert here_state.keys() == there_state.keys()
    assert all(torch.equal(here_state[k], there_state[k]) for k in here_state)


def test_the_childs_error_is_raised_in_the_parent(task: PlannerTask) -> None:
    # The word-order planner on questions built without token states: the child's model fails.
    broken = replace(task, kinds=("attention",))
    with PlannerProcess(broken, 1) as process, pytest.raises(TypeError, match="NoneType"):
        process.result()


def test_kgqa_train_trains_the_planner_beside_the_scorers_within_a_budget_of_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retriever_training.run, "MIN_QUESTIONS", 1)  # the bundled slice is small
    examples = Path(__file__).resolve().parents[2] / "examples" / "metaqa_movies"
    data = str(tmp_path / "d")
    runner = CliRunner()
    ingest = ["ingest", str(examples / "kb.txt"), "--format", "metaqa", "--data-dir", data]
    assert runner.invoke(cli, ingest, catch_exceptions=False).exit_code == 0
    reports, checkpoints = {}, {}
    for threads in ("1", "2"):
        out = str(tmp_path / f"threads{threads}.pt")
        train = [
            "train", str(examples / "questions.txt"), "--format", "metaqa", "--data-dir", data,
            "--limit", "40", "--set", "train.epochs=2", "--set", "train.hidden=32", "--out", out, "--json",
            "--set", "train.reader_min_questions=0",
        ]  # fmt: skip
        result = runner.invoke(cli, train, env={"KGQA_THREADS": threads}, catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        reports[threads], checkpoints[threads] = json.loads(result.stdout), torch.load(out, weights_only=True)
    assert "planner_wait" not in reports["1"]["seconds"]  # one thread: the planner trains here
    assert "planner_wait" in reports["2"]["seconds"]  # two: in its own process
    assert reports["2"]["planner_history"] == reports["1"]["planner_history"]
    alone, beside = (checkpoints[t]["planner"]["state_dict"] for t in ("1", "2"))
    assert all(torch.equal(v, beside[k]) for k, v in alone.items())
    # The reader trains on the whole budget (two threads sum in another order): equal within float
    # tolerance.
    alone, beside = (checkpoints[t]["reader"]["state_dict"] for t in ("1", "2"))
    for k, v in alone.items():
        torch.testing.assert_close(beside[k], v, rtol=1e-3, atol=1e-4, msg=k)
