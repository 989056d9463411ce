"""Loads the Cypher kernels in ``cypher/`` and checks every call against their headers.

This module is the only code that opens ``.cypher`` files. Each file holds one statement whose
``//`` header names its parameters (``// params: $name: type — meaning; ...``) and result
columns (``// returns: col: type, ...``); a call whose parameter names differ from the header is
rejected with the file name, before it reaches a database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kgqa.errors import QueryError

_PARAM_DECL = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^—;\n]+?)\s*(?:—|;|$)", re.MULTILINE)
_PARAM_USE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_RETURN_DECL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*:")
# Literals and comments, where a keyword is only text: strings, quoted names, // and /* */ comments.
_NOT_CODE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|//[^\n]*|/\*.*?\*/", re.S)
_DESTRUCTIVE = re.compile(r"\b(?:DETACH\s+)?DELETE\b|\bREMOVE\b|\bDROP\b", re.I)


@dataclass(frozen=True, slots=True)
class Query:
    """One parsed kernel.

    Attributes:
        name: file stem, e.g. ``subgraph_hop``.
        text: the whole file (header comments included; both backends accept them).
        params: declared parameter name -> declared type (``list<string>``, ``int``, ...).
        returns: declared result column names, in order.
        path: where the file was read from.
    """

    name: str
    text: str
    params: Mapping[str, str]
    returns: tuple[str, ...]
    path: str

    @property
    def body(self) -> str:
        """The statement without its header comments."""
        return "\n".join(ln for ln in self.text.splitlines() if not ln.lstrip().startswith("//")).strip()

    @property
    def destructive_clauses(self) -> tuple[str, ...]:
        """The clauses that delete data (``DELETE``, ``DETACH DELETE``, ``REMOVE``, ``DROP``), upper-cased.

        Found in the statement's code, not in its strings or comments, so ``kgqa cypher`` can
        ask for ``--yes`` before running one.
        """
        code = _NOT_CODE.sub(" ", self.body)
        return tuple(dict.fromkeys(" ".join(m.group().upper().split()) for m in _DESTRUCTIVE.finditer(code)))

    def check_params(self, given: Mapping[str, Any]) -> None:
        """Raise QueryError unless ``given`` has exactly the declared parameter names."""
        missing = sorted(set(self.params) - set(given))
        extra = sorted(set(given) - set(self.params))
        if missing or extra:
            raise QueryError(
                f"{self.path}: parameters do not match the header"
                + (f"; missing {missing}" if missing else "")
                + (f"; unexpected {extra}" if extra else ""),
                query=self.name,
                hint=f"declared: {sorted(self.params)}",
            )


def _header(text: str) -> str:
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("//"):
            break
        lines.append(stripped[2:].strip())
    return "\n".join(lines)


def _section(header: str, name: str) -> str:
    """Text of ``name:`` up to the next ``word:`` section at the start of a line."""
    match = re.search(rf"^{name}:(.*?)(?=^(?:params|returns|notes?|used by):|\Z)", header, re.S | re.M)
    return match.group(1) if match else ""


def parse_query(text: str, *, name: str, path: str) -> Query:
    """Parse one kernel's header; raise QueryError when it is missing or inconsistent."""
    header = _header(text)
    if not header.startswith(f"{name}:"):
        raise QueryError(f"{path}: header must start with '// {name}: <purpose>'", query=name)
    if not re.search(r"^returns:", header, re.M):
        raise QueryError(f"{path}: header has no '// returns:' line", query=name)
    params = {m.group(1): m.group(2).strip() for m in _PARAM_DECL.finditer(_section(header, "params"))}
    returns = tuple(_RETURN_DECL.findall(_section(header, "returns")))
    query = Query(name=name, text=text, params=params, returns=returns, path=path)
    used = set(_PARAM_USE.findall(query.body))
    if used != set(params):
        raise QueryError(
            f"{path}: header params {sorted(params)} differ from params used in the body {sorted(used)}",
            query=name,
        )
    return query


def load_file(path: Path) -> Query:
    """Parse a kernel from any path (``kgqa cypher FILE``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise QueryError(f"cannot read Cypher file {path}: {exc}") from exc
    return parse_query(text, name=path.stem, path=str(path))


@cache
def get(name: str) -> Query:
    """The bundled kernel ``cypher/<name>.cypher``, parsed once per process."""
    resource = resources.files("cypher") / f"{name}.cypher"
    if not resource.is_file():
        raise QueryError(f"no Cypher kernel named '{name}'", query=name, hint=f"known: {names()}")
    return parse_query(resource.read_text(encoding="utf-8"), name=name, path=f"cypher/{name}.cypher")


def names() -> list[str]:
    """Names of all bundled kernels, sorted."""
    return sorted(
        p.name[: -len(".cypher")] for p in resources.files("cypher").iterdir() if p.name.endswith(".cypher")
    )
