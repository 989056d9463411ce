"""The embedded adapter: persistence, one writer per file, error mapping, dialect normalisation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kgqa.errors import QueryError, StoreUnavailableError
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore, _inline_option_params
from kgqa.store.protocol import GraphStore, Statement

TRIPLE = {"rel_type": "DIRECTED_BY", "rows": [{"h": "Jaws", "h_norm": "jaws", "t": "Steven Spielberg",
                                                "t_norm": "steven spielberg"}]}


def test_kglite_store_implements_the_protocol(kglite_store: KgliteStore) -> None:
    assert isinstance(kglite_store, GraphStore)


def test_kglite_store_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "g.kgl"
    with KgliteStore(path) as store:
        (summary,) = store.write([Statement(queries.get("ingest_triples"), TRIPLE)])
        assert summary.relationships_created == 1 and summary.nodes_created == 2
    with KgliteStore(path) as store:
        rows = store.run(queries.get("entities_get"), {"ids": ["Jaws"]})
    assert rows[0]["name"] == "Jaws"


def test_kglite_store_second_writer_process_gets_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "g.kgl"
    with KgliteStore(path) as store:
        store.write([Statement(queries.get("ingest_triples"), TRIPLE)])
        code = (
            "import sys\nfrom pathlib import Path\nfrom kgqa.store.kglite_store import KgliteStore\n"
            "from kgqa.errors import StoreUnavailableError\n"
            f"try:\n    KgliteStore(Path({str(path)!r}))\nexcept StoreUnavailableError as e:\n"
            "    print('unavailable', e); sys.exit(3)\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "open for writing by pid" in proc.stdout


def test_kglite_store_same_process_second_open_is_unavailable(tmp_path: Path) -> None:
    with KgliteStore(tmp_path / "g.kgl"), pytest.raises(StoreUnavailableError):
        KgliteStore(tmp_path / "g.kgl")


def test_kglite_store_maps_syntax_error_to_query_error_with_position(kglite_store: KgliteStore) -> None:
    bad = queries.parse_query("// bad: x\n// returns: n: int\nMATCH (n RETURN n AS n\n", name="bad", path="bad.cypher")
    with pytest.raises(QueryError, match="bad.cypher: Cypher syntax error") as info:
        kglite_store.run(bad, {})
    assert info.value.query == "bad"


def test_kglite_store_checks_params_before_running(kglite_store: KgliteStore) -> None:
    with pytest.raises(QueryError, match=r"cypher/entities_get.cypher.*missing \['ids'\]"):
        kglite_store.run(queries.get("entities_get"), {"id": ["x"]})


def test_inline_option_params_only_touches_options_block() -> None:
    text = "CREATE VECTOR INDEX i FOR (e:E) ON (e.v) OPTIONS {indexConfig: {`d`: $dimensions, `s`: $similarity}}"
    inlined, rest = _inline_option_params(text, {"dimensions": 384, "similarity": "cosine"})
    assert inlined.endswith("{`d`: 384, `s`: 'cosine'}}")
    assert rest == {}
    untouched, rest = _inline_option_params("MATCH (n) WHERE n.x = $x RETURN n", {"x": 1})
    assert "$x" in untouched and rest == {"x": 1}


def test_inline_option_params_rejects_injection() -> None:
    text = "CREATE VECTOR INDEX i FOR (e:E) ON (e.v) OPTIONS {indexConfig: {`s`: $similarity}}"
    with pytest.raises(QueryError, match="not a plain word"):
        _inline_option_params(text, {"similarity": "cosine'}} DETACH DELETE n //"})


def test_kglite_store_info_reports_vector_index_and_model(toy_kg: KgliteStore) -> None:
    info = toy_kg.info()
    vector = {i.name: i for i in info.indexes if i.kind == "VECTOR"}
    assert vector["entity_embedding"].dimensions == 16
    assert vector["entity_embedding"].similarity == "cosine"
    assert info.embedding is not None and info.embedding.model_id == "fake-hash-16"
    assert {i.name for i in info.indexes} >= {"entity_name", "entity_id", "entity_name_norm"}
