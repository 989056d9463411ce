"""``kgqa eval``: answer a question file and score retrieval and answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.ask import answer_options, answer_overrides
from kgqa.cli.common import (
    QUESTION_FORMATS,
    emit_json,
    gold_paths_option,
    hops_option,
    json_option,
    resolve,
    store_options,
    store_overrides,
)
from kgqa.config import redacted


@click.command(name="eval")
@click.argument("questions_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(QUESTION_FORMATS), required=True)
@click.option(
    "--limit", type=int, help="Evaluate a fixed pseudo-random sample of N questions (same N, same questions)."
)
@click.option(
    "--lines",
    "lines_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File of 0-based line numbers to keep (e.g. qa_dev_consistent_idx.txt).",
)
@click.option("--heldout", is_flag=True, help="Keep only the checkpoint's held-out part of the file.")
@click.option(
    "--strip-brackets",
    is_flag=True,
    help="Evaluate as free text: the linker finds each topic, the file's [brackets] are only the "
    "gold of the linking top-1 in the summary.",
)
@hops_option
@gold_paths_option
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Per-question JSONL log (default eval-<file stem>.jsonl); a re-run resumes from it.",
)
@click.option("--restart", is_flag=True, help="Overwrite the log instead of resuming from it.")
@click.option("--concurrency", type=int, help="LLM requests in flight (reader.concurrency, default 4).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes answering questions, each with runtime.question_threads threads (at most "
    "runtime.threads / N) and its own copy of the models; the log stays in question order and resumable.",
)
@click.option("--dry-run", is_flag=True, help="Print the resolved configuration and exit.")
@answer_options
@store_options
@json_option
@pass_state
def evaluate(
    state: CliState,
    questions_file: Path,
    fmt: str,
    limit: int | None,
    lines_file: Path | None,
    heldout: bool,
    strip_brackets: bool,
    hops: str,
    gold_paths: bool,
    log_path: Path | None,
    restart: bool,
    concurrency: int | None,
    workers: int,
    dry_run: bool,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Answer QUESTIONS_FILE with the configured reader and score retrieval and answers.

    \b
    Examples:
      kgqa eval qa_dev.txt --format metaqa --heldout --limit 300
      kgqa eval qa_dev.txt --format metaqa --heldout --strip-brackets   # as people type them
      kgqa eval qa_dev.txt --format metaqa --reader llm --organisation chains --concurrency 8
      kgqa eval qa_val.csv --format stark    # a MoR checkpoint on a text-rich typed graph
      KGQA_THREADS=2 kgqa eval qa_dev.txt --format metaqa --heldout --workers 2   # 1 thread each
    """
    overrides = answer_overrides(opts)
    overrides["reader"]["concurrency"] = concurrency
    loaded = resolve(state, {"store": store_overrides(backend, data_dir), **overrides})
    if dry_run:
        emit_json(redacted(loaded.settings))
        return
    if fmt == "stark":
        if workers > 1:
            raise click.UsageError("--workers applies to KGQA question files, not --format stark")
        from kgqa.eval.mor import run_mor_eval

        mor = run_mor_eval(
            loaded.settings,
            questions_file,
            limit=limit,
            log_path=log_path or Path(f"eval-{questions_file.stem}.jsonl"),
            progress=not as_json,
            restart=restart,
        )
        emit_json(mor.to_dict()) if as_json else click.echo(mor.render())
        return
    from kgqa.eval.session import run_eval

    summary = run_eval(
        loaded.settings,
        questions_file,
        fmt,
        limit=limit,
        lines_file=lines_file,
        heldout=heldout,
        hops=hops,
        log_path=log_path or Path(f"eval-{questions_file.stem}.jsonl"),
        restart=restart,
        free_text=strip_brackets,
        gold_paths=gold_paths,
        progress=not as_json,
        workers=workers,
    )
    if as_json:
        emit_json(summary.to_dict())
    else:
        click.echo(summary.render())
