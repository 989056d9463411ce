"""Thread budget: ``runtime.threads`` / ``KGQA_THREADS`` bounds torch and the OpenMP pools."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgqa.config import load_config
from kgqa.errors import ConfigError
from kgqa.threads import available_cores, resolve_threads

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


def test_cli_command_bounds_torch_threads_in_its_process(tmp_path: Path) -> None:
    # A fresh process: torch's thread count is process-global, and the command must set it
    # whether torch is loaded before or after the settings are resolved.
    script = (
        "import torch\n"
        "from click.testing import CliRunner\n"
        "from kgqa.cli import cli\n"
        "result = CliRunner().invoke(cli, ['config', 'show'])\n"
        "assert result.exit_code == 0, result.output\n"
        "import os\n"
        "print(torch.get_num_threads(), os.environ['OMP_NUM_THREADS'])\n"
    )
    env = {**os.environ, "KGQA_THREADS": "1", "OMP_NUM_THREADS": "2", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["1", "1"]
