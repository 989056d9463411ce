"""``kgqa train --from-graph``: FILES become optional, the generated questions train a
checkpoint with no labelled question at all, and beside labelled ones they train the triple
scorers only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import retriever_training.run
from kgqa.checkpoint_file import load_checkpoint
from kgqa.cli import cli

SLICE = Path(__file__).resolve().parents[3] / "examples" / "metaqa_movies"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_train_asks_for_files_or_from_graph(tmp_path: Path) -> None:
    code, _, err = _run("train", "--data-dir", str(tmp_path))
    assert code == 2 and "--from-graph" in err
    code, _, err = _run("train", str(SLICE / "questions.txt"), "--data-dir", str(tmp_path))
    assert code == 2 and "--format" in err


def test_train_from_graph_alone_writes_a_checkpoint_and_reuses_the_questions(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run("ingest", str(SLICE / "kb.txt"), "--format", "metaqa", "--data-dir", data)
    assert code == 0, err
    args = ("train", "--from-graph", "--set", "train.graph_questions=60", "--data-dir", data)
    args += ("--set", "train.epochs=1", "--set", "train.hidden=32")
    code, out, err = _run(*args, "--json")
    assert code == 0, err
    report = json.loads(out)
    generated = report["from_graph"]
    assert generated["questions"] == 60 and not generated["cached"]
    assert set(generated["by_length"]) >= {"1", "2", "3"}
    assert Path(generated["path"]).parent == Path(data) / "from-graph"
    assert sum(report["questions"].values()) == 60
    assert Path(report["out"]).is_file()
    # Graph-made questions alone train the triple scorers; plans and answers stay the name match's.
    saved = load_checkpoint(Path(report["out"]))
    assert saved["planner"] == {"kind": "name_match"} and saved["reader"] is None
    code, out, err = _run("ask", "who directed Cast Away", "--data-dir", data)
    assert code == 0, err
    assert "Robert Zemeckis" in out and "plans and answers by relation names" in out
    code, out, err = _run(*args, "--set", "train.planner=false", "--set", "train.path_scorer=false")
    assert code == 0, err
    assert "from the graph (reused): 60 questions" in out


def test_limit_samples_the_labelled_files_not_the_graphs_questions(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run("ingest", str(SLICE / "kb.txt"), "--format", "metaqa", "--data-dir", data)
    assert code == 0, err
    args = ("train", str(SLICE / "questions.txt"), "--format", "metaqa", "--from-graph", "--limit", "10")
    args += ("--set", "train.graph_questions=60", "--set", "train.epochs=1", "--set", "train.hidden=32")
    code, out, err = _run(*args, "--data-dir", data, "--json")
    assert code == 0, err
    questions = json.loads(out)["questions"]
    # 10 labelled training questions (and 3 for validation); the 60 graph-made ones split 70/10/20.
    assert questions["train"] > 10 + 30 and questions["val"] >= 3 + 3


def test_beside_labels_the_graphs_questions_train_the_scorers_not_the_planner_or_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run("ingest", str(SLICE / "kb.txt"), "--format", "metaqa", "--data-dir", data)
    assert code == 0, err
    seen: dict[str, list[set[str]]] = {}

    def recording(name: str) -> object:
        trainer = getattr(retriever_training.run, name)

        def record(train: list, val: list, *args: object, **kwargs: object) -> object:
            seen.setdefault(name, []).append({ex.example.qid.split(":")[0] for ex in [*train, *val]})
            return trainer(train, val, *args, **kwargs)

        return record

    for name in ("train_scorer", "train_planner", "train_reader"):
        monkeypatch.setattr(retriever_training.run, name, recording(name))
    args = ("train", str(SLICE / "questions.txt"), "--format", "metaqa", "--from-graph", "--limit", "10")
    args += ("--set", "train.graph_questions=60", "--set", "train.epochs=1", "--set", "train.hidden=32")
    args += ("--set", "train.reader_min_questions=0")  # 10 labels: train the readers all the same
    result = CliRunner().invoke(
        cli, [*args, "--data-dir", data, "--json"], env={"KGQA_THREADS": "1"}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    # Two scorer candidates, on both kinds and on the labels alone; a reader on each, labels only.
    assert seen["train_scorer"] == [{"questions", "graph"}, {"questions"}]
    assert seen["train_planner"] == [{"questions"}]
    assert seen["train_reader"] == [{"questions"}, {"questions"}]
    report = json.loads(result.stdout)
    assert report["examples"]["labelled_train"] <= 10 < report["examples"]["train"]
    # The candidate whose reader validates better on the labelled questions is kept.
    validation = report["graph_questions"]["reader_val"]
    assert validation.keys() == {"with_graph", "labelled"}
    # The higher validation metric; the labels alone on a tie.
    by_rank = max(validation, key=lambda n: (validation[n]["metric"], n == "labelled"))
    assert report["graph_questions"]["kept"] == (by_rank == "with_graph")


def test_graph_questions_beside_labels_leave_the_planner_labels_alone_train(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run("ingest", str(SLICE / "kb.txt"), "--format", "metaqa", "--data-dir", data)
    assert code == 0, err
    args = ("train", str(SLICE / "questions.txt"), "--format", "metaqa", "--limit", "10", "--data-dir", data)
    args += ("--set", "train.graph_questions=60", "--set", "train.epochs=2", "--set", "train.hidden=32")
    planners = []
    for extra in ((), ("--from-graph",)):
        out = str(tmp_path / f"retriever{len(extra)}.pt")
        code, _, err = _run(*args, *extra, "--out", out)
        assert code == 0, err
        planners.append(load_checkpoint(Path(out))["planner"]["state_dict"])
    # The labelled examples are prepared apart from the graph's, so they are the same examples and
    # train the same planner (the embedder's batches would otherwise mix the two).
    alone, beside = planners
    assert alone.keys() == beside.keys()
    assert all(torch.equal(alone[k], beside[k]) for k in alone)


def test_below_reader_min_questions_the_plans_ends_answer(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run("ingest", str(SLICE / "kb.txt"), "--format", "metaqa", "--data-dir", data)
    assert code == 0, err
    args = ("train", str(SLICE / "questions.txt"), "--format", "metaqa", "--limit", "10", "--data-dir", data)
    code, out, err = _run(*args, "--set", "train.epochs=2", "--set", "train.hidden=32", "--json")
    assert code == 0, err
    report = json.loads(out)
    # 10 labelled questions: a planner and scorers, no reader; the likeliest plan's ends answer
    assert report["reader"] == "plan ends" and not report["reader_history"]
    saved = load_checkpoint(Path(report["out"]))
    assert saved["planner"]["kind"] == "plan_scorer" and saved["reader"] is None
    code, out, err = _run("ask", "who directed Cast Away", "--data-dir", data, "--json")
    assert code == 0, err
    asked = json.loads(out)
    assert asked["reader"] == "plan ends" and asked["answers"][0]["name"] == "Robert Zemeckis"
    assert "the likeliest plan's ends" in asked["model"]
    code, out, err = _run(*args, "--set", "train.epochs=2", "--set", "train.hidden=32")
    assert code == 0, err
    assert "extractive reader: not trained on" in out and "the likeliest plan's ends answer" in out


def test_beside_too_few_labels_for_a_reader_the_graphs_questions_train_nothing(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run("ingest", str(SLICE / "kb.txt"), "--format", "metaqa", "--data-dir", data)
    assert code == 0, err
    args = ("train", str(SLICE / "questions.txt"), "--format", "metaqa", "--from-graph", "--limit", "10")
    args += ("--set", "train.graph_questions=60", "--set", "train.epochs=1", "--set", "train.hidden=32")
    code, out, err = _run(*args, "--data-dir", data, "--json")
    assert code == 0, err
    report = json.loads(out)
    # 10 labels: no reader would weigh the graph's scorers against the labels', so the graph's
    # questions are generated but neither prepared nor trained on; the labels' scorers answer.
    assert report["reader"] == "plan ends" and report["from_graph"]["questions"] == 60
    assert report["graph_questions"] == {"kept": False, "used": False}
    assert report["examples"]["train"] == report["examples"]["labelled_train"] <= 10
    assert not any(stage.endswith("_with_graph") for stage in report["seconds"])
    code, out, err = _run(*args, "--data-dir", data)
    assert code == 0, err
    assert "questions made from the graph: not used" in out
