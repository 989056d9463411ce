"""The per-question JSONL log of ``kgqa eval``, for KGQA and MoR question files alike: what makes
a run resumable, and the one loop that answers the questions not yet in it
(:func:`answer_and_log`; the two kinds differ only in the records they answer with and the
metrics they summarise).

Every record carries the run's fingerprint (:func:`fingerprint`: a hash of the settings that
change answers). A re-run with the same log answers only the selected questions not yet
answered under that fingerprint (:func:`resume`), appends their records, and counts exactly the
selected questions; a log written under other settings is refused rather than mixed in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kgqa.errors import ConfigError, LLMUnavailableError
from kgqa.types import QAExample


def fingerprint(key: Mapping[str, Any]) -> str:
    """A short stable hash of ``key`` (JSON-serialisable settings that change answers)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def checkpoint_identity(path: Path) -> list[Any]:
    """What identifies a checkpoint file in a fingerprint: its path, size and mtime (None, None
    when it is missing), so a re-trained file at the same path starts a new run."""
    stat = path.stat() if path.is_file() else None
    return [str(path), stat.st_size if stat else None, stat.st_mtime_ns if stat else None]


def read_log(path: Path, run: str) -> dict[str, dict[str, Any]]:
    """Answered records of an earlier run with fingerprint ``run``, by question id (``qid``).

    Raises:
        ConfigError: the log holds records of a run with other settings (mixing them would
            report numbers no single configuration produced).
    """
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash; that question is simply redone
            if record.get("run") != run:
                raise ConfigError(
                    f"eval log {path} line {number} comes from a run with other settings",
                    hint="pass --restart to overwrite it, or --log to write elsewhere",
                )
            if "error" not in record:
                done[record["qid"]] = record
    return done


def open_log(path: Path, *, restart: bool) -> TextIO:
    """Open the log for appending (or afresh); a line cut short by a crash gets its newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if restart or not path.is_file():
        return path.open("w", encoding="utf-8")
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        cut = size > 0 and fh.seek(size - 1) >= 0 and fh.read(1) != b"\n"
    log = path.open("a", encoding="utf-8")
    if cut:
        log.write("\n")
    return log


def resume(
    examples: Sequence[QAExample], log_path: Path | None, run: str, *, restart: bool
) -> tuple[list[dict[str, Any]], list[QAExample]]:
    """The logged records of ``examples`` answered under ``run`` (in their order) and the
    examples still to answer. Logged answers to questions not in ``examples`` (a run over the
    whole file before a ``--limit`` one) stay in the log but are not returned."""
    logged = {} if restart or log_path is None else read_log(log_path, run)
    done = [logged[e.qid] for e in examples if e.qid in logged]
    return done, [e for e in examples if e.qid not in logged]


@dataclass(frozen=True, slots=True)
class LoggedRun:
    """What :func:`answer_and_log` leaves for a summary: the answered records of the selected
    questions (logged earlier first, in question order, then this run's), how many failed, and
    how many were taken from the log."""

    records: list[dict[str, Any]]
    failed: int
    resumed: int


def answer_and_log(
    examples: Sequence[QAExample],
    answer: Callable[[list[QAExample]], Iterable[dict[str, Any]]],
    *,
    log_path: Path | None,
    fingerprint: str = "",
    restart: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> LoggedRun:
    """The one eval loop, for KGQA and MoR questions alike: answer the ``examples`` not yet in
    the log and log each record as it comes.

    ``answer`` gives the records of the questions still to answer, in their order; a record with
    an ``"error"`` is a failed question, logged with its error and counted as failed, and a re-run
    retries it. Resumes from ``log_path`` (records of the same ``fingerprint``) unless
    ``restart``. Logged answers to other questions (a run over the whole file before a
    ``--heldout`` or ``--limit`` one) stay in the log but are not returned.

    Raises:
        LLMUnavailableError: the LLM backend is down; the answers so far are logged, and the
            message says so (a re-run with the same log does not ask them again).
    """
    done, todo = resume(examples, log_path, fingerprint, restart=restart)
    records = list(done)
    if on_progress:
        on_progress(len(records))
    failed = 0
    log = open_log(log_path, restart=restart) if log_path else None
    try:
        for record in answer(todo):
            if "error" in record:
                failed += 1
            else:
                records.append(record)
            if log:
                log.write(json.dumps({**record, "run": fingerprint}, default=str) + "\n")
                log.flush()
            if on_progress:
                on_progress(1)
    except LLMUnavailableError as exc:
        answered = len(records) - len(done) + failed
        kept = f"the {answered} questions answered before are logged in {log_path}" if log_path else ""
        raise LLMUnavailableError(
            f"{exc} (eval stopped{': ' + kept if kept else ''})",
            hint="start the endpoint (reader.base_url) and re-run"
            + (" with the same --log: answered questions are not asked again" if log_path else ""),
        ) from exc
    finally:
        if log:
            log.close()
    return LoggedRun(records, failed, len(done))
