"""Checkpoint files: a failed or killed save keeps the previous file; a bad file is refused by name."""

from __future__ import annotations

import pickle
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kgqa.atomic_write import atomic_write
from kgqa.checkpoint_file import load_checkpoint, save_checkpoint
from kgqa.errors import CheckpointError

REPO = Path(__file__).resolve().parents[2]
GOOD = {"kind": "kgqa-retriever", "weights": torch.arange(10.0)}


def _child(code: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


def _small_file_limit() -> None:
    limit = 256 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_save_checkpoint_keeps_the_old_file_when_the_disk_is_full(tmp_path: Path) -> None:
    path = tmp_path / "retriever.pt"
    save_checkpoint(GOOD, path)
    before = path.read_bytes()
    child = _child(
        f"""
        import torch
        from kgqa.checkpoint_file import save_checkpoint
        from kgqa.errors import CheckpointError
        try:
            save_checkpoint({{"weights": torch.zeros(1_000_000)}}, __import__("pathlib").Path({str(path)!r}))
        except CheckpointError as exc:
            print("refused:", exc)
        """,
        preexec_fn=_small_file_limit,
    )
    out, err = child.communicate(timeout=120)
    assert "refused: cannot write checkpoint" in out, err
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_save_checkpoint_killed_half_way_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "retriever.pt"
    save_checkpoint(GOOD, path)
    before = path.read_bytes()
    child = _child(
        f"""
        import sys, time, pathlib, torch
        from kgqa.checkpoint_file import save_checkpoint

        def slow_save(obj, handle):
            handle.write(b"x" * 4096)
            handle.flush()
            print("writing", flush=True)
            time.sleep(60)

        torch.save = slow_save
        save_checkpoint({{"weights": torch.zeros(10)}}, pathlib.Path({str(path)!r}))
        """
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "writing"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert path.read_bytes() == before
    assert torch.equal(load_checkpoint(path)["weights"], GOOD["weights"])


def test_atomic_write_leaves_the_target_alone_when_the_block_raises(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    with pytest.raises(ZeroDivisionError), atomic_write(path) as handle:
        handle.write(b"new, half")
        _ = 1 / 0
    assert path.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [path]


class _Foreign:
    """A pickled object of a class no checkpoint holds."""


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "foreign-pickle", "not-a-dict"])
def test_load_checkpoint_refuses_a_bad_file_by_name(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "retriever.pt"
    save_checkpoint({"weights": torch.zeros(10_000)}, path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00not a checkpoint" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "foreign-pickle":
        torch.save({"model": _Foreign()}, path)
    else:
        torch.save(torch.zeros(3), path)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    message = f"{caught.value} {caught.value.hint}"
    assert str(path) in message
    assert "weights_only" not in message
    assert caught.value.hint


def test_load_checkpoint_pickled_foreign_dict_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.pt"
    path.write_bytes(pickle.dumps({"x": _Foreign()}))
    with pytest.raises(CheckpointError, match="other.pt"):
        load_checkpoint(path)
