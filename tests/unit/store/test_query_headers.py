"""Kernel headers: parsed once, every call checked against them before it reaches a store, and
every kernel run by the modules its "used by" line names."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from kgqa.errors import QueryError
from kgqa.store import queries

GOOD = """// find_x: finds x.
// params: $ids: list<string> — ids; $limit: int — cap
// returns: id: string, n: int
// used by: tests
MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id AS id, 1 AS n LIMIT $limit
"""


def test_parse_query_reads_params_and_returns() -> None:
    q = queries.parse_query(GOOD, name="find_x", path="find_x.cypher")
    assert dict(q.params) == {"ids": "list<string>", "limit": "int"}
    assert q.returns == ("id", "n")
    assert q.body.startswith("MATCH") and "//" not in q.body


def test_check_params_names_file_and_differences() -> None:
    q = queries.parse_query(GOOD, name="find_x", path="find_x.cypher")
    with pytest.raises(QueryError, match=r"find_x.cypher.*missing \['limit'\].*unexpected \['k'\]"):
        q.check_params({"ids": [], "k": 1})
    q.check_params({"ids": [], "limit": 1})


def test_parse_query_rejects_param_used_but_not_declared() -> None:
    text = GOOD.replace("$limit: int — cap", "")
    with pytest.raises(QueryError, match="differ from params used"):
        queries.parse_query(text, name="find_x", path="find_x.cypher")


def test_parse_query_rejects_missing_header() -> None:
    with pytest.raises(QueryError, match="header must start"):
        queries.parse_query("MATCH (n) RETURN n", name="x", path="x.cypher")


#: Kernels kept for a module that is planned but not written yet: kernel -> that module.
PLANNED: dict[str, str] = {}


def _used_by(text: str) -> str:
    lines = [ln.split("used by:", 1)[1].strip() for ln in text.splitlines() if ln.startswith("// used by:")]
    return lines[0] if len(lines) == 1 else ""


def _module_source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"no module {module}"
    return Path(spec.origin).read_text(encoding="utf-8")


def test_bundled_kernels_all_parse_and_have_used_by_notes() -> None:
    names = queries.names()
    assert "subgraph_hop" in names and len(names) >= 30
    for name in names:
        q = queries.get(name)
        assert _used_by(q.text), f"{q.path} needs exactly one '// used by:' line"


@pytest.mark.parametrize("name", queries.names())
def test_kernel_used_by_names_existing_modules_that_run_it(name: str) -> None:
    used_by = _used_by(queries.get(name).text)
    if name in PLANNED:
        assert f"planned: {PLANNED[name]}" in used_by
        assert importlib.util.find_spec(PLANNED[name]) is None, (
            f"{PLANNED[name]} exists now: list it as the user of {name} and drop it from PLANNED"
        )
        return
    modules = [part.strip() for part in re.sub(r"\(.*?\)", "", used_by).split(",")]
    assert modules and all(modules), f"{name}: cannot read modules from 'used by: {used_by}'"
    for module in modules:
        assert f'"{name}"' in _module_source(module), f"{name}: header names {module}, which never runs it"


def test_get_unknown_kernel_lists_known_ones() -> None:
    with pytest.raises(QueryError, match="no Cypher kernel named 'nope'"):
        queries.get("nope")


def test_load_file_reads_any_path(tmp_path: Path) -> None:
    path = tmp_path / "find_x.cypher"
    path.write_text(GOOD)
    assert queries.load_file(path).name == "find_x"
