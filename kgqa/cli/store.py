"""``kgqa stats`` and ``kgqa cypher``: look inside the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import emit_json, json_option, resolve, store_options, store_overrides


@click.command()
@store_options
@json_option
@pass_state
def stats(state: CliState, backend: str | None, data_dir: str | None, as_json: bool) -> None:
    """Counts by label and relationship type, index state and the embedding model."""
    loaded = resolve(state, {"store": store_overrides(backend, data_dir)})
    from kgqa.store import open_store
    from kgqa.store.stats import collect_stats

    with open_store(loaded.settings.store) as store:
        result = collect_stats(store)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(result.render())


_INT64 = (-(2**63), 2**63 - 1)


def _fits_int64(value: Any) -> bool:
    if isinstance(value, list):
        return all(_fits_int64(v) for v in value)
    if isinstance(value, dict):
        return all(_fits_int64(v) for v in value.values())
    return not isinstance(value, int) or _INT64[0] <= value <= _INT64[1]


def _parse_param(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"'{text}' is not NAME=VALUE", param_hint="--param")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    if not _fits_int64(value):  # both stores take 64-bit integers; a bigger one was an OverflowError
        raise click.BadParameter(f"'{text}' holds an integer outside the 64-bit range", param_hint="--param")
    return key, value


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--param",
    "-p",
    "params",
    multiple=True,
    help="NAME=VALUE (VALUE parsed as JSON when it is JSON, else a string); repeatable.",
)
@click.option("--write", is_flag=True, help="Run as a write transaction (the kernel modifies the graph).")
@click.option("--yes", is_flag=True, help="Run a kernel that deletes or removes data (DELETE, REMOVE, DROP).")
@store_options
@json_option
@pass_state
def cypher(
    state: CliState,
    file: Path,
    params: tuple[str, ...],
    write: bool,
    yes: bool,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Run one Cypher kernel FILE (e.g. cypher/link_fulltext.cypher) by hand.

    With --write it prints every counter of the write, deletions included. A kernel that
    deletes or removes data runs only with --yes.

    \b
    Example:
      kgqa cypher cypher/link_fulltext.cypher -p query='"Tom Hanks"' -p limit=5
    """
    loaded = resolve(state, {"store": store_overrides(backend, data_dir)})
    from kgqa.store import open_store, queries
    from kgqa.store.protocol import Statement

    query = queries.load_file(file)
    values = dict(_parse_param(p) for p in params)
    query.check_params(values)  # before opening the store: a wrong call needs no data dir
    if query.destructive_clauses and not yes:
        raise click.UsageError(
            f"{file} deletes or removes data ({', '.join(query.destructive_clauses)}); "
            "pass --yes to run it (back up the data dir first)"
        )
    with open_store(loaded.settings.store) as store:
        if write:
            rows: list[dict[str, Any]] = [s.to_dict() for s in store.write([Statement(query, values)])]
        else:
            rows = store.run(query, values)
    if as_json:
        emit_json(rows)
        return
    rows = _unzip_arrays(rows)
    for row in rows:
        click.echo("  ".join(f"{k}={_text(v)}" for k, v in row.items()))
    click.echo(f"({len(rows)} rows)", err=True)


def _unzip_arrays(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kernels return parallel arrays (h_ids, r_types, ...) in one row; show them one per line."""
    if len(rows) != 1 or not rows[0]:
        return rows
    columns = rows[0]
    lengths = {len(v) if isinstance(v, list) else -1 for v in columns.values()}
    if len(lengths) != 1 or -1 in lengths:
        return rows
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
