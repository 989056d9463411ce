"""``--set section.key=value``: every config key reachable from every command that loads config."""

from __future__ import annotations

import json
from pathlib import Path

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
