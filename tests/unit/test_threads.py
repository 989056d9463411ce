"""Thread budget: ``runtime.threads`` / ``KGQA_THREADS`` bounds torch and the OpenMP pools;
question work runs on ``runtime.question_threads`` within it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgqa.config import load_config
from kgqa.errors import ConfigError
from kgqa.eval.workers import worker_threads
from kgqa.threads import available_cores, command_threads, resolve_threads

REPO = Path(__file__).resolve().parents[2]


def test_kgqa_threads_shorthand_sets_runtime_threads() -> None:
    loaded = load_config(config_file=None, environ={"KGQA_THREADS": "3"})
    assert loaded.settings.runtime.threads == 3
    assert loaded.sources["runtime.threads"] == "environment"


def test_zero_threads_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="runtime.threads"):
        load_config(config_file=None, environ={"KGQA_THREADS": "0"})


def test_configured_count_wins_over_omp_num_threads() -> None:
    assert resolve_threads(2, {"OMP_NUM_THREADS": "1"}) == 2


def test_unset_falls_back_to_omp_num_threads_then_all_cores() -> None:
    assert resolve_threads(None, {"OMP_NUM_THREADS": "1"}) == 1
    assert resolve_threads(None, {"OMP_NUM_THREADS": "junk"}) == available_cores()
    assert resolve_threads(None, {}) == available_cores()


def test_the_budget_is_the_callers_after_the_pools_are_bounded() -> None:
    # configure_threads writes OMP_NUM_THREADS for the pools; the budget still reads the caller's
    # (kgqa train on one thread starts the planner's process within a budget of two).
    script = "from kgqa.threads import *; configure_threads(1); print(resolve_threads(None))"
    env = {**os.environ, "OMP_NUM_THREADS": "2", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "2"


def test_bulk_work_gets_the_budget_question_work_its_own_share_within_it() -> None:
    assert command_threads(4, 1, bulk=True) == 4
    assert command_threads(4, 1, bulk=False) == 1
    assert command_threads(4, 2, bulk=False) == 2
    assert command_threads(2, 3, bulk=False) == 2  # never above the budget


def test_question_threads_default_to_one_and_are_configurable() -> None:
    assert load_config(config_file=None, environ={}).settings.runtime.question_threads == 1
    loaded = load_config(config_file=None, environ={"KGQA_RUNTIME__QUESTION_THREADS": "2"})
    assert loaded.settings.runtime.question_threads == 2
    with pytest.raises(ConfigError, match="question_threads"):
        load_config(config_file=None, environ={"KGQA_RUNTIME__QUESTION_THREADS": "0"})


def test_eval_workers_get_question_threads_within_their_share() -> None:
    settings = load_config(config_file=None, environ={"KGQA_THREADS": "4"}).settings
    assert worker_threads(settings, 2) == 1
    wide = load_config(
        config_file=None, environ={"KGQA_THREADS": "4", "KGQA_RUNTIME__QUESTION_THREADS": "4"}
    ).settings
    assert worker_threads(wide, 2) == 2
    assert worker_threads(wide, 8) == 1


def _threads_after_command(args: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """torch's thread count and OMP_NUM_THREADS after running ``kgqa ARGS`` in a fresh process."""
    # A fresh process: torch's thread count is process-global, and the command must set it
    # whether torch is loaded before or after the settings are resolved.
    script = (
        "import torch\n"
        "from click.testing import CliRunner\n"
        "from kgqa.cli import cli\n"
        f"result = CliRunner().invoke(cli, {args!r})\n"
        "assert result.exit_code == 0, result.output\n"
        "import os\n"
        "print(torch.get_num_threads(), os.environ['OMP_NUM_THREADS'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def test_question_commands_run_on_question_threads_ingest_on_the_budget(tmp_path: Path) -> None:
    env = {"KGQA_THREADS": "2", "OMP_NUM_THREADS": "2", "KGQA_DATA_DIR": str(tmp_path / "store")}
    assert _threads_after_command(["config", "show"], env, tmp_path) == ["1", "1"]
    (tmp_path / "kb.tsv").write_text("a\tr\tb\n")
    ingest = ["ingest", "kb.tsv", "--format", "tsv", "--dry-run"]
    assert _threads_after_command(ingest, env, tmp_path) == ["2", "2"]


def test_cli_command_bounds_torch_threads_in_its_process(tmp_path: Path) -> None:
    env = {"KGQA_THREADS": "1", "OMP_NUM_THREADS": "2", "KGQA_RUNTIME__QUESTION_THREADS": "2"}
    assert _threads_after_command(["config", "show"], env, tmp_path) == ["1", "1"]


def test_torch_threads_holds_the_count_within_the_block_and_restores_it() -> None:
    import torch

    from kgqa.threads import torch_threads

    before = torch.get_num_threads()
    with torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(before + 1):
        raise RuntimeError("the block failed")
    assert torch.get_num_threads() == before


def test_map_on_threads_keeps_the_items_order_and_uses_the_threads_given() -> None:
    import threading

    from kgqa.threads import map_on_threads

    def named(item: int) -> tuple[int, str]:
        return item * item, threading.current_thread().name

    alone = map_on_threads(named, range(6), 1, name="kgqa-test")
    assert [r for r, _ in alone] == [0, 1, 4, 9, 16, 25]
    assert {n for _, n in alone} == {threading.current_thread().name}
    pooled = map_on_threads(named, range(6), 2, name="kgqa-test")
    assert [r for r, _ in pooled] == [0, 1, 4, 9, 16, 25]
    assert all(n.startswith("kgqa-test") for _, n in pooled)
    # one item starts no pool
    assert map_on_threads(named, [3], 2, name="kgqa-test") == [(9, threading.current_thread().name)]
