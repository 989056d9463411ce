"""Kernel headers: parsed once, and every call checked against them before it reaches a store."""

from __future__ import annotations

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


def test_bundled_kernels_all_parse_and_have_used_by_notes() -> None:
    names = queries.names()
    assert "subgraph_hop" in names and len(names) >= 30
    for name in names:
        q = queries.get(name)
        assert "used by:" in q.text, f"{q.path} lacks a '// used by:' line"


def test_get_unknown_kernel_lists_known_ones() -> None:
    with pytest.raises(QueryError, match="no Cypher kernel named 'nope'"):
        queries.get("nope")


def test_load_file_reads_any_path(tmp_path: Path) -> None:
    path = tmp_path / "find_x.cypher"
    path.write_text(GOOD)
    assert queries.load_file(path).name == "find_x"
