"""How many CPU threads kgqa's numeric libraries use, set once at start-up of a command.

Why: torch, OpenMP and the tokenizers' rayon pool each default to every core of the machine.
Two such processes on one machine spin their pools against each other and both slow to a
fraction of their speed alone (issue 17: example preparation fell from ~150 to ~9 questions/s).
One number, ``runtime.threads`` (``KGQA_THREADS``), bounds them all; unset, it is
``OMP_NUM_THREADS`` where the caller set that, else every core this process may run on (one
job alone on the machine).

Within that budget, work done one question at a time (ask, retrieve, eval, train, refine) runs on
``runtime.question_threads`` (default 1) and only bulk embedding (ingest) on the whole budget: a
question's tensors are small (a few dozen tokens, subgraphs of hundreds of triples), so a second
thread's wake-up and join on every operation costs more than it divides. On 2 cores, one thread
took MetaQA 2-hop evaluation from 33 to 49 questions/s and the question's embedding from 10.4 to
5.3 ms (docs/decisions.md); for more throughput, answer in several processes (``--workers``).

torch is not imported here: the environment variables cover the libraries not loaded yet (so
``--help`` stays fast), and ``torch.set_num_threads`` covers a torch already loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TypeVar

_In = TypeVar("_In")
_Out = TypeVar("_Out")

#: Environment variables read by the thread pools of OpenMP (torch's intra-op pool), MKL and
#: rayon (the Hugging Face tokenizers' batch encoding) when they start.
POOL_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")

#: The caller's environment as kgqa found it: :func:`configure_threads` overwrites the pools'
#: variables, and the budget must still read the caller's ``OMP_NUM_THREADS`` after that (a
#: command on one thread may start a second process within a budget of two).
_CALLER_ENVIRON = dict(os.environ)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and ``taskset`` narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_threads(configured: int | None, environ: dict[str, str] | None = None) -> int:
    """The thread count to use: ``configured``, else a valid ``OMP_NUM_THREADS`` of ``environ``
    (default: the caller's environment as kgqa found it), else all cores."""
    if configured is not None:
        return configured
    omp = (_CALLER_ENVIRON if environ is None else environ).get("OMP_NUM_THREADS", "")
    return int(omp) if omp.isdigit() and int(omp) > 0 else available_cores()


def command_threads(configured: int | None, question_threads: int, *, bulk: bool) -> int:
    """Threads of one command: the budget (``resolve_threads(configured)``) for bulk work, else
    ``question_threads`` within it."""
    budget = resolve_threads(configured)
    return budget if bulk else min(question_threads, budget)


def configure_threads(threads: int) -> int:
    """Bound every numeric thread pool of this process to ``threads``; return it."""
    for name in POOL_ENV:
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    return threads


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """torch's intra-op pool at ``threads`` within the block, then back to what it was.

    For bulk work inside a command that runs question work on fewer threads: ``kgqa train``
    embeds hundreds of questions per call while preparing its examples, and trains the reader
    on batches of thousands of entity rows, with the rest of its budget idle then.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def map_on_threads(fn: Callable[[_In], _Out], items: Iterable[_In], threads: int, *, name: str) -> list[_Out]:
    """``[fn(item) for item in items]``, on ``threads`` threads where more than one is given and
    there are two items or more (one item runs here: no pool to start for it).

    For work that releases the GIL, such as the store's subgraph queries (1.55x on 2 cores for
    MetaQA 2-hop subgraphs, docs/decisions.md); ``name`` prefixes the threads' names.
    """
    items = list(items)
    if threads < 2 or len(items) < 2:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(threads, thread_name_prefix=name) as pool:
        return list(pool.map(fn, items))


def batch_threads(threads: int, questions: int) -> AbstractContextManager[None]:
    """:func:`torch_threads` at ``threads`` for work shared by a batch of several ``questions``
    (their texts embedded together, one model pass over all); for one question, nothing: its
    work is small and stays on the process's threads (``runtime.question_threads``)."""
    return torch_threads(threads) if questions > 1 and threads > 1 else nullcontext()
