"""Train the planner in a second process while this one trains the triple scorers.

Why: the planner reads nothing the scorers learn (the questions' views, the relations'
embeddings and the plans), and only the reader needs both. Each model trains on one thread
(:mod:`kgqa.threads`), so where the job may use two, the planner's epochs (about a third of
``kgqa train``'s time on MetaQA) run beside the scorers' instead of after them.

The child is a fresh ``python -m retriever_training.planner_process``, not a fork (which would
copy the store's and torch's thread pools in whatever state they are) nor multiprocessing's
spawn (which imports the parent's main script again, and fails for one read from stdin). Its
input and output travel as ``torch.save`` files in a temporary directory, named after this
process (``kgqa-planner-<pid>-*``): the child ends with its parent and removes the directory
(:mod:`kgqa.parent_watch`), and a directory whose process died with both is removed by the next
run's :func:`sweep_stale_folders`. It trains with the
same seed and thread count as this process would, so its planner equals an in-process
:func:`~retriever_training.train.run_planner_task` bit for bit (tested).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import torch

from kgqa.atomic_write import atomic_write
from kgqa.parent_watch import exit_with_parent
from kgqa.retrieval.models.plans import Planner
from kgqa.threads import configure_threads
from retriever_training.train import History, PlannerTask, run_planner_task

#: Fewest training questions for which a second process pays: starting one (a Python with
#: torch) takes a few seconds, a planner on a few hundred questions trains in less.
MIN_QUESTIONS = 500

#: Name prefix of the temporary directories, followed by the parent's pid.
FOLDER_PREFIX = "kgqa-planner-"


class PlannerProcess:
    """A planner training in a child process: ``start``, do other work, then :meth:`result`.

    Use it as a context manager: leaving the block before :meth:`result` (an error in the
    parent's own training) stops the child and removes its files.
    """

    def __init__(self, task: PlannerTask, threads: int) -> None:
        sweep_stale_folders()
        self._folder = tempfile.TemporaryDirectory(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        folder = Path(self._folder.name)
        self._task_file, self._result_file = folder / "task.pt", folder / "result.pt"
        torch.save(task, self._task_file)
        # The child imports what this process imports, from where it does.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        command = [sys.executable, "-m", __name__, str(self._task_file), str(self._result_file), str(threads)]
        command.append(str(os.getpid()))  # the child may outlive this process before it starts watching
        self._process = subprocess.Popen(command, env=env)

    def result(self) -> tuple[Planner, History, float]:
        """Wait for the child; its planner, history and training seconds.

        Raises:
            Exception: what the child's training raised, as raised there.
            RuntimeError: the child died without a result (killed, out of memory).
        """
        code = self._process.wait()
        if not self._result_file.is_file():
            raise RuntimeError(f"the planner's training process ended with code {code}, no result")
        outcome = torch.load(self._result_file, weights_only=False)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["planner"], outcome["history"], outcome["seconds"]

    def __enter__(self) -> PlannerProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            self._process.wait()
        self._folder.cleanup()


def sweep_stale_folders() -> None:
    """Remove the temporary directories of planner processes whose parent is no longer running
    (killed before it could remove them)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        pid = folder.name.removeprefix(FOLDER_PREFIX).split("-", 1)[0]
        if folder.is_dir() and pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _train(task_file: str, result_file: str, threads: int, parent: int) -> None:
    """The child: train the task's planner and write it (or the error) where the parent reads it,
    through a temporary name so a half-written file is never read. If the parent (pid
    ``parent``) dies first, the child removes the parent's directory and ends."""
    exit_with_parent(lambda: shutil.rmtree(Path(task_file).parent, ignore_errors=True), parent=parent)
    configure_threads(threads)
    started = time.perf_counter()
    try:
        task: PlannerTask = torch.load(task_file, weights_only=False)
        planner, history = run_planner_task(task, progress=False)
        outcome: dict[str, object] = {
            "planner": planner,
            "history": history,
            "seconds": time.perf_counter() - started,
        }
    except Exception as error:  # handed to the parent, which raises it
        outcome = {"error": error}
    with atomic_write(Path(result_file)) as handle:
        torch.save(outcome, handle)


if __name__ == "__main__":
    _train(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
