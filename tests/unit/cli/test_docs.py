"""The documentation agrees with the commands: docs/cli.md is the current ``--help`` of each, and
every ``kgqa ...`` line in README.md and docs/ names a command that exists with flags it shows.

docs/decisions.md is the record of what was tried, in the words of its day, and is not checked.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kgqa.cli import cli
from kgqa.cli.reference import render

REPO = Path(__file__).resolve().parents[3]
DOCS = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "decisions.md")]
FENCE = re.compile(r"^```(\w*)\s*$")
INLINE = re.compile(r"`(kgqa [^`]+)`")
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")


def _code_lines(text: str) -> list[str]:
    """Lines of shell code blocks (continuations joined) and inline code spans."""
    found: list[str] = []
    block: str | None = None
    pending = ""
    for line in text.splitlines():
        fence = FENCE.match(line.strip())
        if fence:
            block = None if block is not None else fence.group(1)
            continue
        if block in ("bash", "sh", "shell", "console"):
            line = pending + line.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            found.append(line)
        elif block is None:
            found += INLINE.findall(line)
    return found


def _invocations(line: str) -> list[list[str]]:
    """Each ``kgqa`` invocation of a shell line, as its arguments after ``kgqa``."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # an unclosed quote in prose-like code: take it as is
        words = line.split()
    calls: list[list[str]] = []
    current: list[str] | None = None
    for word in words:
        if word in ("&&", "||", ";", "|", "&", "(", ")"):
            current = None
        elif current is not None:
            current.append(word)
        elif word == "kgqa":
            current = []
            calls.append(current)
        elif not ENV_ASSIGNMENT.match(word):
            current = None
    return calls


CALLS = sorted(
    {
        (path.relative_to(REPO).as_posix(), tuple(call))
        for path in DOCS
        for line in _code_lines(path.read_text(encoding="utf-8"))
        for call in _invocations(line)
        if call
    }
)


def _option_names(command: click.Command, ctx: click.Context) -> set[str]:
    """The options ``--help`` shows: a hidden one is kept only for old scripts (it warns to use
    ``--set``), so the docs must not teach it."""
    names = {"--help", "-h"}
    for param in command.get_params(ctx):
        if isinstance(param, click.Option) and not param.hidden:
            names.update(param.opts + param.secondary_opts)
    return names


def test_docs_name_kgqa_commands() -> None:
    assert len(CALLS) > 30, CALLS


@pytest.mark.parametrize(("doc", "words"), CALLS, ids=[f"{d}: kgqa {' '.join(w)}" for d, w in CALLS])
def test_documented_command_exists_with_its_flags(doc: str, words: tuple[str, ...]) -> None:
    call = " ".join(words)
    command: click.Command = cli
    ctx = click.Context(cli, info_name="kgqa", **cli.context_settings)
    path = ["kgqa"]
    unknown: list[str] = []
    for word in words:
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            if word.split("=", 1)[0] not in _option_names(command, ctx):
                unknown.append(word)
        elif isinstance(command, click.Group):
            sub = command.get_command(ctx, word)
            assert sub is not None, f"{doc}: 'kgqa {call}': no command '{' '.join([*path, word])}'"
            command, path = sub, [*path, word]
            ctx = click.Context(sub, info_name=word, parent=ctx)
    assert not unknown, f"{doc}: 'kgqa {call}': {' '.join(path)} has no option {unknown}"
    result = CliRunner().invoke(cli, [*path[1:], "--help"])
    assert result.exit_code == 0, result.output


def test_cli_reference_is_current() -> None:
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == render(), "docs/cli.md is stale: run python -m kgqa.cli.reference > docs/cli.md"
