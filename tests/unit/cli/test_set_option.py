"""``--set section.key=value``: every config key reachable from every command that loads config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgqa.cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KB = str(FIXTURES / "metaqa_kb_excerpt.txt")
# Every command that resolves settings (kgqa.cli.common.resolve).
CONFIG_COMMANDS = [
    ["ingest"],
    ["embed"],
    ["prepare"],
    ["unprepare"],
    ["stats"],
    ["cypher"],
    ["config", "show"],
    ["link"],
    ["retrieve"],
    ["train"],
    ["refine"],
    ["eval"],
    ["ask"],
    ["show"],
]


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"KGQA_CONFIG": ""}, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", CONFIG_COMMANDS, ids=" ".join)
def test_set_is_offered_by_every_command_that_loads_config(command: list[str]) -> None:
    code, out, _ = _run(*command, "--help")
    assert code == 0 and "--set SECTION.KEY=VALUE" in out


def test_set_reaches_a_key_no_flag_names(tmp_path: Path) -> None:
    code, out, _ = _run(
        "config", "show", "--json", "--set", "answer.max_answers=25", "--set", "retrieval.max_degree=50"
    )
    data = json.loads(out)
    assert code == 0 and data["settings"]["answer"]["max_answers"] == 25
    assert (
        data["settings"]["retrieval"]["max_degree"] == 50
        and data["sources"]["retrieval.max_degree"] == "--set"
    )


def test_set_loses_to_the_flag_named_for_the_same_key(tmp_path: Path) -> None:
    args = ["ingest", KB, "--format", "metaqa", "--data-dir", str(tmp_path / "d"), "--dry-run"]
    code, out, _ = _run(
        *args, "--batch-size", "7", "--set", "ingest.batch_size=9", "--set", "ingest.on_error=skip"
    )
    data = json.loads(out)
    assert code == 0 and data["ingest"]["batch_size"] == 7 and data["ingest"]["on_error"] == "skip"


def test_set_with_an_unknown_key_is_a_usage_error_listing_the_keys() -> None:
    code, _, err = _run("config", "show", "--set", "retrieval.hop=2")
    assert code == 2 and "unknown config key 'retrieval.hop'" in err and "max_per_node" in err


def test_set_with_a_bad_value_names_the_key_and_its_source(tmp_path: Path) -> None:
    code, _, err = _run("config", "show", "--set", "retrieval.hops=many")
    assert code == 1 and "retrieval.hops (--set)" in err


class _Captured(Exception):
    """Raised by a stand-in trainer once it has what ``kgqa train`` passed it."""


@pytest.fixture
def captured_training(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What ``kgqa train`` hands ``run_training``, captured instead of training."""
    import retriever_training.run

    seen: dict[str, Any] = {}

    def run_training(settings: Any, sources: Any, out: Any, **kwargs: Any) -> None:
        seen.update(kwargs, settings=settings)
        raise _Captured

    monkeypatch.setattr(retriever_training.run, "run_training", run_training)
    return seen


def _train(tmp_path: Path, *args: str) -> tuple[int, str]:
    argv = ["train", KB, "--format", "metaqa", "--data-dir", str(tmp_path / "d"), *args]
    result = CliRunner().invoke(cli, argv, env={"KGQA_CONFIG": ""})
    assert isinstance(result.exception, _Captured), result.output
    return result.exit_code, result.stderr


def test_train_set_reaches_the_trainer_settings_split_and_cache(
    tmp_path: Path, captured_training: dict[str, Any]
) -> None:
    _, err = _train(
        tmp_path,
        *("--set", "train.epochs=4", "--set", "train.hidden=32", "--set", "train.planner_kind=auto"),
        *("--set", "train.seed=7", "--set", "train.val_fraction=0.2", "--set", "train.cache_examples=false"),
        *("--set", "train.path_scorer=false", "--set", "questions.oracle_hops=true"),
    )
    settings = captured_training["train_settings"]
    assert (settings.epochs, settings.scorer_hidden, settings.reader_hidden) == (4, 32, 32)
    assert settings.planner_kind == "auto" and settings.seed == 7 and settings.path_scorer is False
    assert captured_training["split"].val_fraction == 0.2 and captured_training["split"].seed == 7
    assert captured_training["cache_dir"] is None and captured_training["oracle_hops"] is True
    assert "deprecated" not in err.lower()


def test_train_defaults_come_from_the_train_section(
    tmp_path: Path, captured_training: dict[str, Any]
) -> None:
    from kgqa.config import Settings
    from retriever_training.train import TrainSettings

    _train(tmp_path)
    assert captured_training["train_settings"] == TrainSettings.from_config(Settings().train)
    assert captured_training["cache_dir"] == tmp_path / "d" / "example-cache"
    assert captured_training["gold_paths"] is True and captured_training["oracle_hops"] is False


def test_train_hidden_flags_still_work_and_name_their_key(
    tmp_path: Path, captured_training: dict[str, Any]
) -> None:
    _, err = _train(
        tmp_path, "--epochs", "5", "--hidden", "16", "--no-planner", "--hops", "2", "--no-gold-paths"
    )
    settings = captured_training["train_settings"]
    assert settings.epochs == 5 and settings.scorer_hidden == 16 and settings.planner is False
    assert captured_training["subgraph"].hops == 2 and captured_training["gold_paths"] is False
    assert "use --set train.epochs=VALUE" in err and "use --set retrieval.hops=N" in err


def test_train_and_eval_show_few_options_and_hide_the_config_flags() -> None:
    """Issue 32's budget: train <= 10 options, eval <= 12, ask <= 10 (-h/--help not counted)."""
    import click

    for command, most in (("train", 10), ("eval", 12), ("ask", 10), ("refine", 10)):
        params = cli.commands[command].params
        shown = [p.name for p in params if isinstance(p, click.Option) and not p.hidden]
        assert len(shown) <= most, (command, shown)
    _, out, _ = _run("train", "--help")
    assert "--epochs" not in out and "--planner-kind" not in out


def test_eval_set_and_hidden_flags_reach_the_eval_section(tmp_path: Path) -> None:
    args = ["eval", KB, "--format", "metaqa", "--data-dir", str(tmp_path / "d"), "--dry-run"]
    code, out, _ = _run(*args, "--set", "eval.workers=3", "--set", "eval.strip_brackets=true")
    data = json.loads(out)
    assert code == 0 and data["eval"]["workers"] == 3 and data["eval"]["strip_brackets"] is True
    code, out, err = _run(*args, "--workers", "2", "--reader", "llm", "--hops", "oracle")
    data = json.loads(out)
    assert code == 0 and data["eval"]["workers"] == 2 and data["reader"]["kind"] == "llm"
    assert data["questions"]["oracle_hops"] is True and "use --set eval.workers=VALUE" in err


def test_config_show_lists_the_train_keys() -> None:
    code, out, _ = _run("config", "show", "--set", "train.epochs=4")
    assert code == 0 and "[train]" in out and "epochs = 4  # --set" in out and "planner_kind = 'mlp'" in out


def test_refine_set_and_hidden_flags_reach_the_judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import retriever_training.refine

    seen: dict[str, Any] = {}

    def run_refine(settings: Any, path: Any, fmt: Any, out: Any, **kwargs: Any) -> None:
        seen.update(kwargs)
        raise _Captured

    monkeypatch.setattr(retriever_training.refine, "run_refine", run_refine)
    argv = [
        "refine",
        KB,
        "--format",
        "metaqa",
        "--out",
        str(tmp_path / "o.jsonl"),
        "--data-dir",
        str(tmp_path),
    ]
    args = ["--set", "refine.rounds=0", "--set", "refine.seed=5", "--margin", "0.25", "--judge", "llm"]
    result = CliRunner().invoke(cli, [*argv, *args], env={"KGQA_CONFIG": ""})
    assert isinstance(result.exception, _Captured), result.output
    planner = seen["planner_settings"]
    assert (
        planner.rounds == 0 and planner.margin == 0.25 and planner.train.seed == 5 and seen["judge"] == "llm"
    )
    assert seen["cache_path"] == tmp_path / "o.jsonl.judgements.jsonl"
    assert "use --set refine.margin=VALUE" in result.stderr


def test_refine_defaults_are_the_planner_refine_defaults() -> None:
    """The [refine] section is the one source; the CLI trains the judge's planners as before."""
    from kgqa.config import Settings
    from retriever_training.refine import PlannerRefineSettings

    from_config, library = PlannerRefineSettings.from_config(Settings().refine), PlannerRefineSettings()
    assert (from_config.rounds, from_config.margin, from_config.ensemble) == (
        library.rounds,
        library.margin,
        library.ensemble,
    )
    assert from_config.train.epochs == library.train.epochs and from_config.train.seed == library.train.seed
