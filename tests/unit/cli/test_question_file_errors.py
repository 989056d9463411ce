"""eval, train and refine refuse a broken question file (corrupt .gz, repeated ids) by name:
``error:`` and ``hint:`` lines, exit 1, no traceback."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgqa.cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
QUESTION = "who directed [Cast Away]\tRobert Zemeckis\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("store")
    kb = str(FIXTURES / "metaqa_kb_excerpt.txt")
    result = CliRunner().invoke(cli, ["ingest", kb, "--format", "metaqa", "--data-dir", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def _broken(tmp_path: Path, damage: str) -> tuple[Path, str]:
    if damage == "truncated-gz":
        packed = gzip.compress((QUESTION * 500).encode())
        path = tmp_path / "qa_train.txt.gz"
        path.write_bytes(packed[: len(packed) // 2])
        return path, "truncated or corrupt"
    path = tmp_path / "qa_train.jsonl"
    path.write_text(
        '{"id": "q1", "question": "who directed cast away", "q_entity": ["Cast Away"], '
        '"a_entity": ["Robert Zemeckis"]}\n'
        '{"id": "q1", "question": "what genre is jaws", "q_entity": ["Jaws"], "a_entity": ["Thriller"]}\n',
        encoding="utf-8",
    )
    return path, "question id 'q1' repeats the one on line 1"


@pytest.mark.parametrize("damage", ["truncated-gz", "repeated-id"])
@pytest.mark.parametrize("command", ["eval", "train", "refine"])
def test_command_refuses_a_broken_question_file(
    data: Path, tmp_path: Path, command: str, damage: str
) -> None:
    path, problem = _broken(tmp_path, damage)
    fmt = "metaqa" if path.suffix == ".gz" else "rog-jsonl"
    args = [command, str(path), "--format", fmt, "--data-dir", str(data)]
    if command == "train":
        args += ["--out", str(tmp_path / "new.pt")]
    elif command == "refine":
        args += ["--out", str(tmp_path / "refined.jsonl")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"error: {path}" in result.stderr and problem in result.stderr
    assert "hint:" in result.stderr


def test_train_with_no_question_the_store_knows_says_why_once(data: Path, tmp_path: Path) -> None:
    questions = tmp_path / "qa_train.txt"
    lines = [f"who directed [Film {i}]\tDirector {i}" for i in range(40)] + ["who directed Cast Away\tX"]
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        [
            "train",
            str(questions),
            "--format",
            "metaqa",
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "m.pt"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "error: no training question could be prepared" in result.stderr
    assert "not in the store" in result.stderr and "hint:" in result.stderr
    assert result.stderr.count("WARNING") <= 2
