"""Options and rendering shared by several commands."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kgqa.cli import CliState
from kgqa.config import LoadedConfig, load_config, parse_assignments
from kgqa.errors import ConfigError
from kgqa.threads import command_threads, configure_threads

if TYPE_CHECKING:
    from kgqa.retrieval.disambiguation import Disambiguation

F = TypeVar("F", bound=Callable[..., Any])

#: Question file formats ``kgqa train`` and ``kgqa eval`` read (:data:`kgqa.eval.datasets.FORMATS`).
QUESTION_FORMATS = ["metaqa", "pathquestion", "wc2014", "rog-jsonl", "stark"]


#: Where ``--set`` leaves its parsed assignments for :func:`resolve` (``click.Context.meta``).
SET_META_KEY = "kgqa.set"


def _parse_set(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    try:
        ctx.meta[SET_META_KEY] = parse_assignments(value)
    except ConfigError as e:
        raise click.BadParameter(f"{e}{f' ({e.hint})' if e.hint else ''}", ctx, param) from None


def set_option(func: F) -> F:
    """--set section.key=value (repeatable): any config key, for one run."""
    return click.option(
        "--set",
        "assignments",
        multiple=True,
        metavar="SECTION.KEY=VALUE",
        callback=_parse_set,
        expose_value=False,
        help="Set any config key for this run, e.g. --set retrieval.hops=2 --set answer.max_answers=20 "
        "(repeatable; flags named for a key win; 'kgqa config show' lists the keys).",
    )(func)


def store_options(func: F) -> F:
    """--store / --data-dir, the two settings nearly every command needs, and --set for the rest."""
    func = set_option(func)
    func = click.option(
        "--data-dir",
        type=click.Path(file_okay=False),
        help="Embedded store directory (store.data_dir, default ./kgqa-data).",
    )(func)
    func = click.option(
        "--store", "backend", type=click.Choice(["embedded", "neo4j"]), help="Graph store backend."
    )(func)
    return func


def config_flag(*decls: str, key: str, **kwargs: Any) -> Callable[[F], F]:
    """A flag kept from before ``--set`` for one config ``key``: hidden from ``--help``, still
    working, and warning that ``--set KEY=VALUE`` replaces it (a release of grace, then gone)."""
    return click.option(*decls, hidden=True, deprecated=f"use --set {key}=VALUE", **kwargs)


def question_options(func: F) -> F:
    """--topic for commands that take one question (and --hops, kept hidden: retrieval.hops)."""
    func = config_flag("--hops", key="retrieval.hops", type=click.IntRange(min=1))(func)
    func = click.option(
        "--topic", "topics", multiple=True, help="Topic entity id (skips linking); repeatable."
    )(func)
    return func


def _check_hops(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from kgqa.eval.splits import hops_reader

    if value is not None:
        try:
            hops_reader(value, 1)
        except ValueError as e:
            raise click.BadParameter(str(e).removeprefix("--hops "), ctx, param) from None
    return value


def hops_flag(func: F) -> F:
    """--hops of the commands over question files, kept hidden from before ``--set``: a number
    is ``retrieval.hops``, ``oracle`` is ``questions.oracle_hops`` (:func:`question_file_overrides`)."""
    return click.option(
        "--hops",
        hidden=True,
        callback=_check_hops,
        deprecated="use --set retrieval.hops=N, or --set questions.oracle_hops=true for 'oracle'",
    )(func)


def question_file_flags(func: F) -> F:
    """--hops and --gold-paths/--no-gold-paths (``questions.gold_paths``) of ``train`` and
    ``eval``, both kept hidden from before ``--set``."""
    func = config_flag("--gold-paths/--no-gold-paths", key="questions.gold_paths", default=None)(func)
    return hops_flag(func)


def question_file_overrides(hops: str | None, gold_paths: bool | None) -> dict[str, dict[str, Any]]:
    """Config overrides of :func:`question_file_flags`: a number of ``--hops`` is
    ``retrieval.hops``, ``oracle`` is ``questions.oracle_hops`` (``auto`` is the default)."""
    from kgqa.eval.splits import ORACLE_HOPS

    return {
        "retrieval": {"hops": int(hops) if hops is not None and hops.isdigit() else None},
        "questions": {"oracle_hops": True if hops == ORACLE_HOPS else None, "gold_paths": gold_paths},
    }


def checkpoint_option(func: F) -> F:
    return click.option(
        "--checkpoint",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Retriever checkpoint (retrieval.checkpoint; default <data-dir>/retriever.pt).",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(func)


def resolve(
    state: CliState, overrides: Mapping[str, Mapping[str, Any]], *, bulk: bool = False
) -> LoadedConfig:
    """Load settings with this command's flags as the highest-precedence layer, its ``--set``
    assignments next.

    Every command resolves its settings here first, so this also bounds the process's numeric
    thread pools before any model is loaded: to ``runtime.threads`` for a command that embeds
    in ``bulk`` (ingest), else to ``runtime.question_threads`` within it (:mod:`kgqa.threads`).
    """
    ctx = click.get_current_context(silent=True)
    assignments = ctx.meta.get(SET_META_KEY) if ctx is not None else None
    loaded = load_config(overrides, config_file=state.config_file, assignments=assignments)
    runtime = loaded.settings.runtime
    configure_threads(command_threads(runtime.threads, runtime.question_threads, bulk=bulk))
    return loaded


def store_overrides(backend: str | None, data_dir: str | None) -> dict[str, Any]:
    return {"backend": backend, "data_dir": data_dir}


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def render_disambiguation(disambiguation: Disambiguation) -> str:
    """One line per contender for the first topic, the chosen one first, with the fit margin."""
    lines = [f"topic chosen by fit to the question (margin {disambiguation.margin:.3f} over the runner-up):"]
    for rank, fit in enumerate(disambiguation.ranked):
        share = "n/a" if fit.plan_share is None else f"{fit.plan_share:.3f}"
        mark = "*" if rank == 0 else " "
        lines.append(
            f"  {mark} {fit.entity.name} [{fit.entity.id}]  fit={fit.fit:.3f}  plan share={share}  "
            f"best triple={fit.best_triple:.3f}  link={fit.entity.score:.2f} ({fit.entity.method})"
        )
    return "\n".join(lines)
