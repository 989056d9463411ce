"""Imports point one way: ingest -> store/cypher -> retrieval -> reasoning -> eval/cli, with training
beside retrieval and never imported by ``kgqa`` (only the ``kgqa train`` command and ``kgqa.train``
of the public API start it).

Function-level imports count too: they hide a cycle, they do not remove it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# importing package -> packages it must not import (prefix match on dotted module names).
ABOVE_STORE = ("kgqa.link", "kgqa.retrieval", "kgqa.reasoning", "kgqa.answer", "kgqa.pipeline", "kgqa.eval")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "kgqa.store": ABOVE_STORE,
    "kgqa.embed": ("kgqa.store", *ABOVE_STORE),
    "kgqa.retrieval": ("kgqa.reasoning", "kgqa.answer", "kgqa.pipeline", "kgqa.eval"),
    "kgqa.reasoning": ("kgqa.pipeline", "kgqa.eval"),
    "kgqa.answer": ("kgqa.pipeline", "kgqa.eval"),
    "kgqa": ("kgqa.cli", "ingest", "retriever_training"),
    "ingest": (
        "kgqa.link",
        "kgqa.retrieval",
        "kgqa.reasoning",
        "kgqa.pipeline",
        "kgqa.eval",
        "kgqa.cli",
        "kgqa.api",
    ),
    "retriever_training": ("kgqa.cli", "kgqa.api"),
}
# The command line and the public API (kgqa.api, which the command line's verbs mirror) are the
# places that start every stage, ingest and training included.
EXEMPT = ("kgqa.cli", "kgqa.api")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


SOURCES = sorted(p for top in ("kgqa", "ingest", "retriever_training") for p in (REPO / top).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_module_imports_only_downward(path: Path) -> None:
    module = _module_name(path)
    if any(_within(module, e) for e in EXEMPT):
        return
    wrong = sorted(
        f"{imported} (rule: {package} never imports {banned})"
        for package, bans in FORBIDDEN.items()
        if _within(module, package)
        for banned in bans
        for imported in _imports(path)
        if _within(imported, banned) and not _within(module, banned)
    )
    assert not wrong, f"{module} imports upward: {wrong}"
