"""What every benchmark records beside its numbers: git sha, machine, versions, parameters."""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def git_sha() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def environment(device: str) -> dict[str, Any]:
    import torch

    from kgqa import __version__

    return {
        "git_sha": git_sha(),
        "machine": platform.node(),
        "cpu_count": _cpus(),
        "device": device,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "kgqa": __version__,
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


def retriever_settings(data_dir: Path, device: str, checkpoint: Path | None) -> Any:
    """Settings for a benchmark over a trained store: defaults, no environment but the thread budget."""
    from kgqa.config import load_config

    bench_threads()
    overrides = {
        "store": {"data_dir": str(data_dir)},
        "embedder": {"device": device},
        "retrieval": {"checkpoint": str(checkpoint) if checkpoint else None},
    }
    return load_config(overrides, environ={}).settings


def thread_budget() -> int:
    """The machine's thread budget for a benchmark: ``KGQA_THREADS``, else ``OMP_NUM_THREADS``,
    else all cores (the budget is the machine's, not the benchmark's)."""
    import os

    from kgqa.threads import resolve_threads

    value = os.environ.get("KGQA_THREADS")
    return resolve_threads(int(value) if value else None)


def bench_threads() -> int:
    """Bound the thread pools as every question-answering kgqa command does: to the default
    ``runtime.question_threads`` within :func:`thread_budget`.

    Benchmarks read no other setting from the environment (their numbers must not depend on
    it), but the thread budget is the machine's, not the benchmark's.
    """
    from kgqa.config import RuntimeSettings
    from kgqa.threads import command_threads, configure_threads

    return configure_threads(command_threads(thread_budget(), RuntimeSettings().question_threads, bulk=False))


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, default=str) + "\n")


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def format_value(value: Any) -> str:
    """A measurement for a table: floats to 3 decimals below 10, else 1 with thousands; None as -."""
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3f}"
    return "-" if value is None else str(value)


def comparison_rows(columns: dict[str, dict[str, Any]], *, ratio: bool) -> list[list[str]]:
    """One row per metric of ``columns`` (name -> metric -> value; metrics in first-seen order), a
    cell per column; with ``ratio`` also the first column's value over the second's (blank where
    either is not a float or the second is 0)."""
    keys = list(dict.fromkeys(k for c in columns.values() for k in c))
    rows = []
    for key in keys:
        values = [c.get(key) for c in columns.values()]
        row = [key, *(format_value(v) for v in values)]
        if ratio:
            a, b = values[:2]
            row.append(format_value(a / b) if isinstance(a, float) and isinstance(b, float) and b else "")
        rows.append(row)
    return rows


#: Held-out questions per file that ``--size`` names (:func:`heldout_size_option`).
HELDOUT_SIZES = {"tiny": 20, "small": 300, "full": None}


def heldout_size_option() -> Any:
    """The ``--size tiny|small|full`` option of the benches that score held-out questions."""
    return click.option(
        "--size",
        type=click.Choice(sorted(HELDOUT_SIZES)),
        default="small",
        show_default=True,
        help="Held-out questions per file: tiny 20, small 300, full all.",
    )


def out_option(name: str) -> Any:
    """The ``--out FILE`` option every bench takes: where its JSONL record is appended
    (``bench/results/<name>.jsonl`` by default)."""
    return click.option(
        "--out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=REPO / "bench" / "results" / f"{name}.jsonl",
        show_default=True,
        help="JSONL file the run's record is appended to.",
    )
