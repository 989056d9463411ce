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
