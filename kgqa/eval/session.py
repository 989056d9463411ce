"""Wires ``kgqa eval``: question selection (lines, held-out part, limit) -> asker -> metrics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kgqa.checkpoint_file import load_checkpoint
from kgqa.config import Settings
from kgqa.errors import CheckpointError, IngestError
from kgqa.eval.datasets import file_stem, read_line_numbers, read_questions, sample, without_gold_paths
from kgqa.eval.log import checkpoint_identity, fingerprint
from kgqa.eval.run import EvalSummary, evaluate, evaluate_records
from kgqa.eval.splits import SplitSettings, hops_reader
from kgqa.pipeline import open_asker, train_free
from kgqa.threads import resolve_threads
from kgqa.types import QAExample


def heldout_part(examples: list[QAExample], checkpoint: Path, path: Path) -> list[QAExample]:
    """The questions of ``path`` the checkpoint's training split kept out (same key, hash and seed).

    Raises:
        CheckpointError: the checkpoint records no split, or split by file name and line (before
            splits followed the question) and ``path`` is named like none of its training files,
            so its held-out part would count training questions.
    """
    data = load_checkpoint(checkpoint)
    if not isinstance(data.get("split"), dict):
        raise CheckpointError(
            f"checkpoint {checkpoint} records no training split, so no held-out part",
            hint="drop --heldout, or use a checkpoint 'kgqa train' wrote",
        )
    split = SplitSettings.from_checkpoint(data["split"])
    trained_on = {file_stem(Path(source)) for source, _ in data.get("sources", [])}
    if split.key == "qid" and file_stem(path) not in trained_on:
        raise CheckpointError(
            f"checkpoint {checkpoint} split its questions by file name and line, and {path} is "
            f"named like none of its training files ({', '.join(sorted(trained_on)) or 'none recorded'})",
            hint="evaluate the training file under its own name, or train again (splits now follow "
            "each question's text and answers)",
        )
    return split.parts(examples)["heldout"]


def select(
    settings: Settings, path: Path, fmt: str, *, limit: int | None, lines_file: Path | None, heldout: bool
) -> list[QAExample]:
    """The questions of ``path`` this run evaluates.

    Raises:
        IngestError: none are left (an empty file, or flags that select nothing), rather than a
            summary of NaNs.
    """
    lines = read_line_numbers(lines_file) if lines_file else None
    examples = list(read_questions(path, fmt, lines=lines))
    if not examples:
        raise IngestError("no questions to evaluate: the file holds none", path=str(path))
    if heldout and train_free(settings):
        # Nothing was trained, so nothing was seen: the held-out part of the default split keeps
        # train-free numbers comparable with those of a checkpoint trained by default.
        examples = SplitSettings().parts(examples)["heldout"]
    elif heldout:
        examples = heldout_part(examples, settings.checkpoint_path, path)
    selected = sample(examples, limit)
    if not selected:
        raise IngestError(
            "no questions to evaluate: --heldout/--limit selected none",
            path=str(path),
            hint="drop or widen them",
        )
    return selected


def run_fingerprint(
    settings: Settings, hops: str, *, free_text: bool = False, gold_paths: bool = True
) -> str:
    """Hash of everything that changes an answer: checkpoint file, retrieval, evidence, reader,
    and whether the linker or the file chose the topics."""
    reader = settings.reader.model_dump(mode="json", exclude={"api_key", "concurrency", "timeout_s"})
    key = {
        "checkpoint": checkpoint_identity(settings.checkpoint_path),
        "store": settings.store.model_dump(mode="json", exclude={"neo4j_password"}),
        "retrieval": settings.retrieval.model_dump(mode="json"),
        "answer": settings.answer.model_dump(mode="json"),
        "reader": reader,
        "hops": hops,
        **({"free_text": True} if free_text else {}),
        **({"gold_paths": False} if not gold_paths else {}),
    }
    return fingerprint(key)


def run_eval(
    settings: Settings,
    path: Path,
    fmt: str,
    *,
    limit: int | None,
    lines_file: Path | None,
    heldout: bool,
    hops: str,
    log_path: Path | None,
    restart: bool = False,
    free_text: bool = False,
    gold_paths: bool = True,
    progress: bool,
    workers: int = 1,
) -> EvalSummary:
    """Evaluate the configured asker on the selected questions of ``path`` (resuming its log);
    ``free_text``: link every question's topics (see :func:`~kgqa.eval.run.answer_records`);
    ``gold_paths=False``: ignore the relation paths the file names (``--no-gold-paths``);
    ``workers`` > 1: answer in that many processes (:mod:`kgqa.eval.workers`), same log and summary."""
    examples = select(settings, path, fmt, limit=limit, lines_file=lines_file, heldout=heldout)
    if not gold_paths:
        examples = without_gold_paths(examples)
    hops_of = hops_reader(hops, settings.retrieval.hops)
    run = run_fingerprint(settings, hops, free_text=free_text, gold_paths=gold_paths)
    if workers > 1:
        from kgqa.eval.workers import worker_records

        def answer(todo: list[QAExample]) -> Iterator[dict[str, Any]]:
            chunk = [(example, hops_of(example)) for example in todo]
            return worker_records(settings, chunk, workers=workers, free_text=free_text)

        with tqdm(total=len(examples), desc="eval", disable=not progress, leave=False) as bar:
            return evaluate_records(
                examples, answer, log_path=log_path, fingerprint=run, restart=restart, on_progress=bar.update
            )
    with (
        open_asker(settings) as asker,
        tqdm(total=len(examples), desc="eval", disable=not progress, leave=False) as bar,
    ):
        return evaluate(
            asker,
            examples,
            log_path=log_path,
            hops_of=hops_of,
            fingerprint=run,
            concurrency=settings.reader.concurrency,
            restart=restart,
            free_text=free_text,
            on_progress=bar.update,
            batch=settings.eval.batch_size,
            threads=resolve_threads(settings.runtime.threads),
        )
