"""Every command that reads a checkpoint refuses a corrupt or foreign one by name, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from kgqa.checkpoint_file import save_checkpoint
from kgqa.cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("store")
    result = CliRunner().invoke(
        cli,
        ["ingest", str(FIXTURES / "metaqa_kb_excerpt.txt"), "--format", "metaqa", "--data-dir", str(folder)],
    )
    assert result.exit_code == 0, result.output
    return folder


class _Foreign:
    pass


def _damaged(path: Path, damage: str) -> Path:
    save_checkpoint({"kind": "kgqa-retriever", "weights": torch.zeros(10_000)}, path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:1000])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        torch.save({"kind": _Foreign()}, path)
    return path


@pytest.mark.parametrize("damage", ["truncated", "empty", "foreign"])
@pytest.mark.parametrize("command", ["retrieve", "ask", "eval", "eval-heldout", "train-reuse"])
def test_command_refuses_a_bad_checkpoint_by_name(
    data: Path, tmp_path: Path, command: str, damage: str
) -> None:
    checkpoint = _damaged(tmp_path / "retriever.pt", damage)
    questions = tmp_path / "qa.txt"
    questions.write_text("who directed [Cast Away]\tRobert Zemeckis\n", encoding="utf-8")
    common = ["--data-dir", str(data), "--checkpoint", str(checkpoint)]
    args = {
        "retrieve": ["retrieve", "who directed [Cast Away]", *common],
        "ask": ["ask", "who directed [Cast Away]", *common],
        "eval": ["eval", str(questions), "--format", "metaqa", "--log", str(tmp_path / "l.jsonl"), *common],
        "eval-heldout": ["eval", str(questions), "--format", "metaqa", "--heldout", *common],
        "train-reuse": [
            "train",
            str(questions),
            "--format",
            "metaqa",
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "new.pt"),
            "--set",
            f"train.reuse_scorers={checkpoint}",
        ],
    }[command]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr and "weights_only" not in result.stderr
    assert f"error: checkpoint {checkpoint}" in result.stderr
    assert "hint:" in result.stderr
