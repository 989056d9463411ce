"""The ``kgqa`` command line: a root group and one module per command group.

Command bodies stay thin: parse options, ``load_config``, call one library function, render.
Heavy imports (torch, transformers, kglite, neo4j) happen inside command bodies, so ``--help``
is fast; a test checks that.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from kgqa import __version__
from kgqa.errors import KgqaError


@dataclass
class CliState:
    """What the root group hands to every command."""

    config_file: Path | None
    debug: bool


pass_state = click.make_pass_decorator(CliState)


class KgqaGroup(click.Group):
    """Turns ``KgqaError`` into a one-line message plus hint on stderr and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KgqaError as exc:
            state = ctx.find_object(CliState)
            if state is not None and state.debug:
                raise
            echo_error(exc, err=True)
            sys.exit(1)


def echo_error(exc: KgqaError, *, err: bool) -> None:
    """``exc`` as the CLI shows it: "error: ..." in red, then its hint; on stderr where ``err``
    (a command that fails), on stdout where the error stands in a question's place
    (``kgqa ask -``)."""
    click.secho(f"error: {exc}", fg="red", err=err)
    if exc.hint:
        click.echo(f"hint: {exc.hint}", err=err)


@click.group(cls=KgqaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kgqa")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="KGQA_CONFIG",
    help="TOML config file (default: ./kgqa.toml, else ~/.config/kgqa/config.toml).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.pass_context
def cli(ctx: click.Context, config_file: Path | None, debug: bool) -> None:
    """Question answering over knowledge graphs stored in a graph database.

    Settings come from flags, then --set section.key=value, then KGQA_<SECTION>__<KEY>
    environment variables (KGQA_STORE and KGQA_DATA_DIR are shorthands), then the config file,
    then defaults. Python: import kgqa; kgqa.open(data_dir=...).ask(question).
    """
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # the driver logs every server notification (deprecations, plan hints) as a warning: shown
    # with --debug only
    logging.getLogger("neo4j.notifications").setLevel(logging.NOTSET if debug else logging.ERROR)
    ctx.obj = CliState(config_file=config_file, debug=debug)


def _register() -> None:
    from kgqa.cli import ask, config_cmd, eval_cmd, ingest, link, refine, retrieve, store, train

    cli.add_command(ingest.ingest)
    cli.add_command(ingest.embed)
    cli.add_command(ingest.prepare)
    cli.add_command(ingest.unprepare)
    cli.add_command(store.stats)
    cli.add_command(store.cypher)
    cli.add_command(config_cmd.config)
    cli.add_command(link.link)
    cli.add_command(retrieve.retrieve)
    cli.add_command(train.train)
    cli.add_command(refine.refine)
    cli.add_command(eval_cmd.evaluate)
    cli.add_command(ask.ask)
    cli.add_command(ask.show)


_register()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="kgqa")
