"""The Neo4j half of the dialect check: Neo4j's own language library lints every kernel.

Needs Node.js and `npm ci` in tools/cypher_lint (CI does both); skipped with a reason otherwise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_DIR = REPO / "tools" / "cypher_lint"


def _lint(cypher_dir: Path) -> tuple[int, dict]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed; the Neo4j lint needs Node.js")
    if not (LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support").is_dir():
        pytest.skip("run 'npm ci' in tools/cypher_lint to install @neo4j-cypher/language-support")
    proc = subprocess.run(
        ["node", str(LINT_DIR / "lint.mjs"), str(cypher_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_every_kernel_passes_the_neo4j_lint() -> None:
    code, report = _lint(REPO / "cypher")
    errors = [(f["file"], d) for f in report["files"] for d in f["diagnostics"] if d["severity"] == "error"]
    assert code == 0 and errors == []
    assert len(report["files"]) == len(list((REPO / "cypher").glob("*.cypher")))


def test_lint_rejects_unknown_procedure_and_undeclared_param(tmp_path: Path) -> None:
    (tmp_path / "bad_proc.cypher").write_text(
        "// bad_proc: x\n// params: $k: int — n\n// returns: s: float\n"
        "CALL db.index.vector.queryNodez('i', $k, [1.0]) YIELD score RETURN score AS s\n"
    )
    (tmp_path / "bad_param.cypher").write_text(
        "// bad_param: x\n// params: none\n// returns: n: int\nMATCH (n) RETURN count(n) AS n LIMIT $limit\n"
    )
    code, report = _lint(tmp_path)
    messages = {f["file"]: " ".join(d["message"] for d in f["diagnostics"]) for f in report["files"]}
    assert code == 1
    assert "queryNodez" in messages["bad_proc.cypher"]
    assert "$limit" in messages["bad_param.cypher"]


def test_every_kernel_rendered_for_a_mapped_graph_passes_the_neo4j_lint(tmp_path: Path) -> None:
    from kgqa.store import queries
    from tests.mapped_graph import MAPPING

    for name in queries.names():
        (tmp_path / f"{name}.cypher").write_text(MAPPING.render(queries.get(name)).text, encoding="utf-8")
    code, report = _lint(tmp_path)
    errors = [(f["file"], d) for f in report["files"] for d in f["diagnostics"] if d["severity"] == "error"]
    assert code == 0 and errors == []


SNIPPET_HEADER = (
    "// snippet: the Browser text as printed\n// params: $id: string — question id\n// returns: q: node\n"
)


def test_browser_snippet_pastes_as_printed(tmp_path: Path) -> None:
    """What `kgqa ask --save` / `kgqa show` print parses as Neo4j's clients read it: `:param ...;`
    then the query. Without the `;` (the negative control) the parser reads one broken statement."""
    from kgqa.saved_questions import browser_cypher
    from kgqa.store.mapping import GraphMapping
    from tests.mapped_graph import MAPPING

    for i, mapping in enumerate((GraphMapping(), MAPPING)):
        text = browser_cypher('q-"quoted"\\id', mapping)
        (tmp_path / f"snippet_{i}.cypher").write_text(SNIPPET_HEADER + text + "\n", encoding="utf-8")
    code, report = _lint(tmp_path)
    assert code == 0, report
    unterminated = browser_cypher("q-1", GraphMapping()).replace(";\n", "\n", 1)
    (tmp_path / "snippet_without_semicolon.cypher").write_text(
        SNIPPET_HEADER + unterminated, encoding="utf-8"
    )
    code, report = _lint(tmp_path)
    failing = {f["file"] for f in report["files"] if any(d["severity"] == "error" for d in f["diagnostics"])}
    assert code == 1 and failing == {"snippet_without_semicolon.cypher"}
