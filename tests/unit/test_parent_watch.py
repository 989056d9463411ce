"""Children end with their parent (kill -9 or SIGTERM of the parent), with real processes and signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgqa.parent_watch import exit_with_parent  # noqa: F401  (imported by the scripts below)

REPO = Path(__file__).resolve().parents[2]

# A parent that starts two spawn workers the way `kgqa eval --workers 2` does (their initializer
# watches the parent), prints their pids and waits forever.
POOL_PARENT = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from kgqa.parent_watch import exit_with_parent

def pid():
    time.sleep(0.2)
    return os.getpid()

if __name__ == "__main__":
    spawn = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(2, mp_context=spawn, initializer=exit_with_parent)
    pids = {f.result() for f in [pool.submit(pid) for _ in range(8)]}
    print(" ".join(map(str, sorted(pids))), flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (dead, not yet reaped by its new parent) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def _gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("signal_", [signal.SIGKILL, signal.SIGTERM])
def test_spawn_workers_die_within_5_s_of_their_parent(tmp_path: Path, signal_: signal.Signals) -> None:
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(POOL_PARENT), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert workers and all(_alive(p) for p in workers)
    parent.send_signal(signal_)
    parent.wait(timeout=30)
    try:
        assert _gone_within(workers, 5.0), f"workers still running: {[p for p in workers if _alive(p)]}"
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_planner_child_ends_with_its_parent_and_removes_the_folder(tmp_path: Path) -> None:
    # The real child entry point, blocked reading its task from a FIFO nobody writes.
    folder = tmp_path / "kgqa-planner-1-x"
    folder.mkdir()
    os.mkfifo(folder / "task.pt")
    parent_code = (
        "import os, subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-m', 'retriever_training.planner_process', "
        f"{str(folder / 'task.pt')!r}, {str(folder / 'result.pt')!r}, '1', str(os.getpid())]); "
        "print(c.pid, flush=True); time.sleep(600)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(3)  # the child imports torch and starts its watch
    parent.kill()
    parent.wait(timeout=30)
    try:
        # A loaded machine may take longer than the sleep to import torch; the watch, given its
        # parent's pid, ends the child as soon as it starts (the test below), so only wait longer.
        assert _gone_within([child], 60.0)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
    assert not folder.exists()


def test_a_child_whose_parent_died_before_it_watched_ends_at_once() -> None:
    # The parent that started it is gone (its pid given), and the child has another parent now:
    # os.getppid() alone would take the new parent for its own and never end.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    code = "import time; from kgqa.parent_watch import exit_with_parent; "
    code += f"exit_with_parent(parent={gone.pid}); time.sleep(60)"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, env=env)
    try:
        _, err = child.communicate(timeout=30)
        assert (child.returncode, err) == (1, "")  # the watch's exit, not an error
    finally:
        child.kill()


def test_sweep_removes_folders_of_dead_runs_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from retriever_training.planner_process import FOLDER_PREFIX, sweep_stale_folders

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live = tmp_path / f"{FOLDER_PREFIX}{dead.pid}-abc", tmp_path / f"{FOLDER_PREFIX}{os.getpid()}-def"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "task.pt").write_bytes(b"x")
    sweep_stale_folders()
    assert not stale.exists() and live.exists()
