"""``kgqa eval``: answer a question file and score retrieval and answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.ask import answer_options, answer_overrides
from kgqa.cli.common import (
    QUESTION_FORMATS,
    config_flag,
    emit_json,
    json_option,
    question_file_flags,
    question_file_overrides,
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
@click.option("--heldout", is_flag=True, help="Keep only the checkpoint's held-out part of the file.")
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Per-question JSONL log (default eval-<file stem>.jsonl); a re-run resumes from it.",
)
@click.option("--restart", is_flag=True, help="Overwrite the log instead of resuming from it.")
@click.option("--dry-run", is_flag=True, help="Print the resolved configuration and exit.")
@config_flag(
    "--lines",
    "lines_file",
    key="eval.lines_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@config_flag("--strip-brackets", key="eval.strip_brackets", is_flag=True, default=None)
@config_flag("--workers", key="eval.workers", type=click.IntRange(min=1))
@config_flag("--concurrency", key="reader.concurrency", type=int)
@question_file_flags
@answer_options(reader_flags=False)
@store_options
@json_option
@pass_state
def evaluate(
    state: CliState,
    questions_file: Path,
    fmt: str,
    limit: int | None,
    heldout: bool,
    log_path: Path | None,
    restart: bool,
    dry_run: bool,
    lines_file: Path | None,
    strip_brackets: bool | None,
    workers: int | None,
    concurrency: int | None,
    hops: str | None,
    gold_paths: bool | None,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Answer QUESTIONS_FILE with the configured reader and score retrieval and answers.

    The reader, how the file is read and how the work is spread are config keys:
    reader.*, eval.strip_brackets (free text, as people type), eval.lines_file, eval.workers
    (processes), eval.batch_size (questions retrieved together, default 32; 1 = one at a time)
    ('kgqa config show' lists them all).

    \b
    Examples:
      kgqa eval qa_dev.txt --format metaqa --heldout --limit 300
      kgqa eval qa_dev.txt --format metaqa --heldout --set eval.strip_brackets=true   # as typed
      kgqa eval qa_dev.txt --format metaqa --set reader.kind=llm --set reader.concurrency=8
      kgqa eval qa_val.csv --format stark    # a MoR checkpoint on a text-rich typed graph
      KGQA_THREADS=2 kgqa eval qa_dev.txt --format metaqa --heldout --set eval.workers=2   # 1 thread each
    """
    overrides = answer_overrides(opts)
    overrides["reader"]["concurrency"] = concurrency
    files = question_file_overrides(hops, gold_paths)
    overrides["retrieval"].update(files["retrieval"])
    eval_flags = {"lines_file": lines_file, "strip_brackets": strip_brackets, "workers": workers}
    loaded = resolve(
        state,
        {
            "store": store_overrides(backend, data_dir),
            **overrides,
            "questions": files["questions"],
            "eval": eval_flags,
        },
    )
    if dry_run:
        emit_json(redacted(loaded.settings))
        return
    settings = loaded.settings
    if fmt == "stark":
        if settings.eval.workers > 1:
            raise click.UsageError("eval.workers applies to KGQA question files, not --format stark")
        from kgqa.eval.mor import run_mor_eval

        mor = run_mor_eval(
            settings,
            questions_file,
            limit=limit,
            log_path=log_path or Path(f"eval-{questions_file.stem}.jsonl"),
            progress=not as_json,
            restart=restart,
        )
        emit_json(mor.to_dict()) if as_json else click.echo(mor.render())
        return
    from kgqa.eval.session import run_eval
    from kgqa.eval.splits import AUTO_HOPS, ORACLE_HOPS

    summary = run_eval(
        settings,
        questions_file,
        fmt,
        limit=limit,
        lines_file=settings.eval.lines_file,
        heldout=heldout,
        hops=ORACLE_HOPS if settings.questions.oracle_hops else AUTO_HOPS,
        log_path=log_path or Path(f"eval-{questions_file.stem}.jsonl"),
        restart=restart,
        free_text=settings.eval.strip_brackets,
        gold_paths=settings.questions.gold_paths,
        progress=not as_json,
        workers=settings.eval.workers,
    )
    if as_json:
        emit_json(summary.to_dict())
    else:
        click.echo(summary.render())
