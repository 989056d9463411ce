"""``kgqa eval --workers N``: answer the questions in N processes; the log stays in question order.

Why processes: a question's retrieval is a chain of small torch operations and store calls on
one Python thread, so a second torch thread gains little, while a second process answering
other questions keeps the second core busy. Each worker opens its own asker (store, embedder,
checkpoint) with ``runtime.question_threads`` threads, at most its share of ``runtime.threads``
(:mod:`kgqa.threads`), so their thread pools do not spin against each other. The parent hands
out the questions in chunks and takes the records back in chunk order, so the log it writes
(:func:`kgqa.eval.run.evaluate_records`) is the one a single process would write, resumable
under the same fingerprint.

The cost: every worker loads the models and opens the store, so start-up CPU and memory grow
with N; worth it for files of hundreds of questions, not for a handful.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from typing import Any

from kgqa.config import Settings
from kgqa.parent_watch import exit_with_parent
from kgqa.pipeline import Asker, open_asker
from kgqa.threads import configure_threads, resolve_threads
from kgqa.types import QAExample

#: Questions per task handed to a worker (retrieved together there, as a batch of at most
#: ``eval.batch_size``): small enough that the workers finish together, large enough that passing
#: records between processes stays a small share of a question.
CHUNK = 4

# The worker process's asker, opened once by its initializer and kept until the process ends.
_asker: Asker | None = None
_open = ExitStack()


def worker_threads(settings: Settings, workers: int) -> int:
    """Threads each of ``workers`` processes gets: ``question_threads``, at most its share of the
    run's budget, at least one."""
    share = resolve_threads(settings.runtime.threads) // workers
    return max(1, min(settings.runtime.question_threads, share))


def _start(settings: Settings, threads: int, parent: int) -> None:
    """Worker initializer: end with the parent, pid ``parent`` (:mod:`kgqa.parent_watch`), bound
    the thread pools, then open the asker (store and models)."""
    global _asker
    exit_with_parent(parent=parent)
    configure_threads(threads)
    _asker = _open.enter_context(open_asker(settings))


def _answer(
    chunk: Sequence[tuple[QAExample, int | None]], free_text: bool, concurrency: int, batch: int, threads: int
) -> list[dict[str, Any]]:
    """Records of one chunk of (question, hops), in order, by this worker's asker."""
    from kgqa.eval.run import answer_records

    assert _asker is not None, "worker started without its asker"
    hops = {example.qid: h for example, h in chunk}
    return list(
        answer_records(
            _asker,
            [example for example, _ in chunk],
            lambda example: hops[example.qid],
            concurrency=concurrency,
            free_text=free_text,
            batch=batch,
            threads=threads,
        )
    )


def worker_records(
    settings: Settings,
    examples: Sequence[tuple[QAExample, int | None]],
    *,
    workers: int,
    free_text: bool = False,
) -> Iterator[dict[str, Any]]:
    """Each (question, hops)'s log record in input order, answered by ``workers`` processes.

    Workers start with ``spawn`` (a fresh interpreter: no torch or kglite state copied from the
    parent) and each loads its own asker; a chunk's records come back when the chunk is done,
    and chunks are yielded in order, so a later chunk finished early waits for an earlier one.
    """
    chunks = [list(examples[i : i + CHUNK]) for i in range(0, len(examples), CHUNK)]
    if not chunks:
        return
    threads = worker_threads(settings, workers)
    with ProcessPoolExecutor(
        max_workers=min(workers, len(chunks)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start,
        initargs=(settings, threads, os.getpid()),
    ) as pool:
        futures = [
            pool.submit(
                _answer, chunk, free_text, settings.reader.concurrency, settings.eval.batch_size, threads
            )
            for chunk in chunks
        ]
        try:
            for future in futures:
                yield from future.result()
        finally:
            for future in futures:
                future.cancel()
