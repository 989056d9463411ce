"""``kgqa config show``: every resolved setting with where it came from (secrets redacted)."""

from __future__ import annotations

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import emit_json, json_option, resolve, set_option
from kgqa.config import redacted


@click.group()
def config() -> None:
    """Inspect configuration."""


@config.command("show")
@set_option
@json_option
@pass_state
def show(state: CliState, as_json: bool) -> None:
    """Print the resolved settings and the source of each non-default value."""
    loaded = resolve(state, {})
    data = redacted(loaded.settings)
    if as_json:
        emit_json({"config_file": loaded.config_file, "settings": data, "sources": loaded.sources})
        return
    click.echo(f"# config file: {loaded.config_file or '(none)'}")
    for section, values in data.items():
        click.echo(f"[{section}]")
        for key, value in values.items():
            source = loaded.sources.get(f"{section}.{key}", "default")
            click.echo(f"{key} = {value!r}  # {source}")
