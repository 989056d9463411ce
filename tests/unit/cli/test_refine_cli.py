"""``kgqa refine`` and ``questions.gold_paths`` through the command line, on the bundled MetaQA slice."""

from __future__ import annotations

import json
import math
from pathlib import Path

from click.testing import CliRunner
from llm_fakes import ChatServer

from kgqa.cli import cli
from kgqa.eval.datasets import read_questions

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "metaqa_movies"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_refine_then_train_on_the_refined_file(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run(
        "ingest", str(EXAMPLES / "kb.txt"), "--format", "metaqa", "--data-dir", data, "--json"
    )
    assert code == 0, err
    refined = tmp_path / "refined.jsonl"
    code, out, err = _run(
        "refine",
        str(EXAMPLES / "questions.txt"),
        "--format",
        "metaqa",
        "--out",
        str(refined),
        "--data-dir",
        data,
        "--limit",
        "60",
        "--rounds",
        "1",
        "--epochs",
        "2",
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["questions"] == 60 and report["judge"] == "planner" and len(report["rounds"]) == 1
    assert report["choice_questions"] <= report["prepared"] <= 60
    assert report["kept"] <= report["candidates"]
    questions = list(read_questions(refined, "rog-jsonl"))
    assert len(questions) == 60
    assert (
        sum(bool(q.relation_paths) for q in questions) == report["prepared"] - report["kept_histogram"]["0"]
    )
    train_args = [
        str(refined),
        "--format",
        "rog-jsonl",
        "--set",
        "retrieval.hops=2",
        "--data-dir",
        data,
        "--out",
        str(tmp_path / "r.pt"),
        "--set",
        "train.epochs=1",
        "--set",
        "train.hidden=16",
        "--set",
        "train.path_scorer=false",
        "--json",
    ]
    code, out, err = _run("train", *train_args)
    assert code == 0, err
    assert json.loads(out)["examples"]["train"] > 0
    # MetaQA never walks back through the topic: the refined paths keep train's rule "never back".
    assert report["walk_rule"]["questions"] == report["prepared"]
    assert report["walk_rule"]["topic_walks"] is json.loads(out)["walk_rule"]["topic_walks"] is False
    # questions.gold_paths=false changes the labels, so it prepares (and caches) examples of its own.
    for expected in ("written", "hit"):
        code, out, err = _run("train", *train_args, "--set", "questions.gold_paths=false")
        assert code == 0, err
        assert json.loads(out)["example_cache"]["train"] == expected
    # eval reads the refined paths as gold; questions.gold_paths=false ignores them, and is a run of its own
    # (its log is not resumed by the other).
    common = [
        "--format",
        "rog-jsonl",
        "--set",
        "retrieval.hops=2",
        "--data-dir",
        data,
        "--checkpoint",
        str(tmp_path / "r.pt"),
    ]
    summaries = []
    for gold in ("true", "false"):
        log = str(tmp_path / f"eval-{gold}.jsonl")
        flag = ["--set", f"questions.gold_paths={gold}"]
        code, out, err = _run("eval", str(refined), *common, "--limit", "10", "--log", log, *flag, "--json")
        assert code == 0, err
        summaries.append(json.loads(out))
    code, _, err = _run("eval", str(refined), *common, "--limit", "10", "--log", log)
    assert code == 1 and "comes from a run with other settings" in err
    with_gold, without = summaries
    assert without["n"] == with_gold["n"] == 10
    assert not math.isnan(with_gold["gold_path_triple_recall"]["100"])
    assert all(math.isnan(v) for v in without["gold_path_triple_recall"].values())


def test_refine_with_an_llm_that_is_down_is_refused_with_a_hint(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    code, _, err = _run(
        "ingest", str(EXAMPLES / "kb.txt"), "--format", "metaqa", "--data-dir", data, "--json"
    )
    assert code == 0, err
    with ChatServer() as server:
        url = server.url  # closed when the block ends: nothing listens there any more
    result = CliRunner().invoke(
        cli,
        [
            "refine",
            str(EXAMPLES / "questions.txt"),
            "--format",
            "metaqa",
            "--out",
            str(tmp_path / "out.jsonl"),
            "--data-dir",
            data,
            "--limit",
            "20",
            "--judge",
            "llm",
            "--base-url",
            url,
            "--model",
            "m",
        ],
        env={"KGQA_READER__MAX_RETRIES": "0", "KGQA_READER__TIMEOUT_S": "5"},
    )
    assert result.exit_code == 1
    assert (
        "refine stopped: 0 judgements cached" in result.stderr and "hint: start the endpoint" in result.stderr
    )
    assert not (tmp_path / "out.jsonl").exists()
