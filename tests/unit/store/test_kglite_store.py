"""The embedded adapter: persistence, one writer per file, error mapping, dialect normalisation."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

from kgqa.errors import MissingIndexError, QueryError, StoreError, StoreUnavailableError
from kgqa.store import queries
from kgqa.store.kglite_store import VECTOR_CACHE, KgliteStore
from kgqa.store.kglite_vectors import VectorSearch
from kgqa.store.protocol import GraphStore, Statement

TRIPLE = {
    "rel_type": "DIRECTED_BY",
    "rows": [{"h": "Jaws", "h_norm": "jaws", "t": "Steven Spielberg", "t_norm": "steven spielberg"}],
}


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
    with KgliteStore(path) as store:
        store.write([Statement(queries.get("ingest_triples"), TRIPLE)])  # holds the writer lease
        code = (
            "import sys\nfrom pathlib import Path\nfrom kgqa.store.kglite_store import KgliteStore\n"
            "from kgqa.errors import StoreUnavailableError\n"
            "from kgqa.store import queries\nfrom kgqa.store.protocol import Statement\n"
            f"s = KgliteStore(Path({str(path)!r}))\n"
            "print('rows', len(s.run(queries.get('entities_get'), {'ids': ['Jaws']})))\n"
            "try:\n    s.write([Statement(queries.get('meta_get'), {})])\n"
            "except StoreUnavailableError as e:\n"
            "    print('unavailable', e); sys.exit(3)\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "rows 1" in proc.stdout  # a reader is never blocked by the writer
    assert "open for writing by pid" in proc.stdout


def test_kglite_store_second_writer_in_same_process_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "g.kgl"
    with KgliteStore(path) as creator:
        creator.write([Statement(queries.get("ingest_triples"), TRIPLE)])
    with KgliteStore(path) as first:
        first.write([Statement(queries.get("ingest_triples"), TRIPLE)])
        with KgliteStore(path) as second, pytest.raises(StoreUnavailableError):
            second.write([Statement(queries.get("ingest_triples"), TRIPLE)])


def test_kglite_store_read_only_use_leaves_the_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "g.kgl"
    with KgliteStore(path) as store:
        store.write([Statement(queries.get("ingest_triples"), TRIPLE)])
    before = path.stat().st_mtime_ns
    with KgliteStore(path) as store:
        assert store.run(queries.get("entities_get"), {"ids": ["Jaws"]})
    assert path.stat().st_mtime_ns == before


def test_kglite_store_maps_syntax_error_to_query_error_with_position(kglite_store: KgliteStore) -> None:
    bad = queries.parse_query(
        "// bad: x\n// returns: n: int\nMATCH (n RETURN n AS n\n", name="bad", path="bad.cypher"
    )
    with pytest.raises(QueryError, match="bad.cypher: Cypher syntax error") as info:
        kglite_store.run(bad, {})
    assert info.value.query == "bad"


def test_kglite_store_checks_params_before_running(kglite_store: KgliteStore) -> None:
    with pytest.raises(QueryError, match=r"cypher/entities_get.cypher.*missing \['ids'\]"):
        kglite_store.run(queries.get("entities_get"), {"id": ["x"]})


def test_vector_index_is_served_by_exact_search_equal_to_kglites_own(
    toy_kg: KgliteStore, fake_embedder: Any
) -> None:
    vector = fake_embedder.embed(["Robert Zemeckis films"])[0].tolist()
    ours = toy_kg.run(queries.get("link_vector"), {"embedding": vector, "k": 5})
    # kglite's own HNSW-backed procedure on the same vectors (cheap at toy size), raw cosine scores
    graph = toy_kg.graph
    graph.cypher(
        "CREATE VECTOR INDEX native FOR (e:Entity) ON (e.embedding) "
        "OPTIONS {indexConfig: {`vector.dimensions`: 16, `vector.similarity_function`: 'cosine'}}"
    )
    native = graph.cypher(
        "CALL db.index.vector.queryNodes('native', 5, $v) YIELD node, score RETURN node.id AS id, score",
        params={"v": vector},
    ).to_list()
    assert [r["id"] for r in ours] == [r["id"] for r in native]
    for mine, theirs in zip(ours, native, strict=True):
        assert mine["score"] == pytest.approx((1 + theirs["score"]) / 2, abs=1e-5)


def test_vector_index_ddl_is_recorded_listed_and_dropped(toy_kg: KgliteStore) -> None:
    listed = {r["name"]: r for r in toy_kg.run(queries.get("index_list"))}
    assert listed["entity_embedding"]["type"] == "VECTOR"
    assert listed["entity_embedding"]["options"]["indexConfig"]["vector.dimensions"] == 16
    toy_kg.write([Statement(queries.get("index_drop_vector_entity"), {})])
    assert "entity_embedding" not in {r["name"] for r in toy_kg.run(queries.get("index_list"))}
    with pytest.raises(MissingIndexError, match="no vector index named 'entity_embedding'"):
        toy_kg.run(queries.get("link_vector"), {"embedding": [0.0] * 16, "k": 3})


def test_vector_search_sees_writes_made_after_the_first_query(toy_kg: KgliteStore) -> None:
    target = [1.0] + [0.0] * 15
    toy_kg.run(queries.get("link_vector"), {"embedding": target, "k": 1})
    toy_kg.write(
        [
            Statement(
                queries.get("embed_set_entities"),
                {"model_id": "fake-hash-16", "rows": [{"id": "Jaws", "embedding": target}]},
            )
        ]
    )
    top = toy_kg.run(queries.get("link_vector"), {"embedding": target, "k": 1})[0]
    assert top["id"] == "Jaws" and top["score"] == pytest.approx(1.0, abs=1e-6)


def test_a_read_only_store_keeps_its_vector_matrix_for_the_next_process(
    toy_kg: KgliteStore, fake_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = toy_kg.path
    toy_kg.close()
    vector = fake_embedder.embed(["Robert Zemeckis films"])[0].tolist()
    params = {"embedding": vector, "k": 5}
    with KgliteStore(path) as first:
        expected = first.run(queries.get("link_vector"), params)
    saved = path.parent / VECTOR_CACHE / "entity_embedding.pt"
    assert saved.is_file()

    def no_graph_read(*_: Any) -> Any:
        raise AssertionError("read the vectors from the graph again")

    with monkeypatch.context() as patch:
        patch.setattr(VectorSearch, "_read_matrix", no_graph_read)
        with KgliteStore(path) as second:
            assert second.run(queries.get("link_vector"), params) == expected

    # A write makes the saved matrix stale: the next reader reads the graph's new vector.
    target = [1.0] + [0.0] * 15
    with KgliteStore(path) as writer:
        writer.write(
            [
                Statement(
                    queries.get("embed_set_entities"),
                    {"model_id": "fake-hash-16", "rows": [{"id": "Jaws", "embedding": target}]},
                )
            ]
        )
    with KgliteStore(path) as third:
        assert third.run(queries.get("link_vector"), {"embedding": target, "k": 1})[0]["id"] == "Jaws"

    saved.write_bytes(b"not a matrix")  # damaged: ignored and rebuilt
    with KgliteStore(path) as fourth:
        assert fourth.run(queries.get("link_vector"), {"embedding": target, "k": 1})[0]["id"] == "Jaws"

    # A file as kgqa wrote them before the ids were joined (a list, the stamp as "stamp"), its
    # ids reversed: stale, so read from the graph again, not taken for this state's ids.
    data = torch.load(saved, weights_only=True)
    ids = data["eids"].split("\n")[::-1]
    before = {"stamp": data["graph_state"], "index": data["index"], "eids": ids, "matrix": data["matrix"]}
    torch.save(before, saved)
    with KgliteStore(path) as fifth:
        assert fifth.run(queries.get("link_vector"), {"embedding": target, "k": 1})[0]["id"] == "Jaws"


def test_vector_query_with_wrong_dimension_is_a_query_error(toy_kg: KgliteStore) -> None:
    with pytest.raises(QueryError, match="has 3 dims but index 'entity_embedding' has 16"):
        toy_kg.run(queries.get("link_vector"), {"embedding": [1.0, 0.0, 0.0], "k": 3})


def test_kglite_store_info_reports_vector_index_and_model(toy_kg: KgliteStore) -> None:
    info = toy_kg.info()
    vector = {i.name: i for i in info.indexes if i.kind == "VECTOR"}
    assert vector["entity_embedding"].dimensions == 16
    assert vector["entity_embedding"].similarity == "cosine"
    assert info.embedding is not None and info.embedding.model_id == "fake-hash-16"
    assert {i.name for i in info.indexes} >= {"entity_name", "entity_id", "entity_name_norm"}


def _killed_writer(path: Path) -> None:
    """Commit one triple in another process, then die without closing (kill -9)."""
    code = (
        "import os\nfrom pathlib import Path\nfrom kgqa.store.kglite_store import KgliteStore\n"
        "from kgqa.store import queries\nfrom kgqa.store.protocol import Statement\n"
        f"s = KgliteStore(Path({str(path)!r}))\n"
        f"s.write([Statement(queries.get('ingest_triples'), {TRIPLE!r})])\n"
        "os._exit(9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, proc.stderr


def test_kglite_store_reader_sees_the_commits_of_a_killed_writer(tmp_path: Path) -> None:
    path = tmp_path / "g.kgl"
    with KgliteStore(path) as store:
        store.write([Statement(queries.get("meta_get"), {})])
    _killed_writer(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # kglite's "newer commits" UserWarning would fail here
        with KgliteStore(path) as store:
            rows = store.run(queries.get("entities_get"), {"ids": ["Jaws"]})
    assert [r["name"] for r in rows] == ["Jaws"]


def test_kglite_store_reader_during_a_live_write_logs_one_line_instead_of_kglites_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "g.kgl"
    with KgliteStore(path) as store:
        store.write([Statement(queries.get("meta_get"), {})])
    with KgliteStore(path) as writer:
        writer.write([Statement(queries.get("ingest_triples"), TRIPLE)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with KgliteStore(path) as reader:
                rows = reader.run(queries.get("entities_get"), {"ids": ["Jaws"]})
    assert rows == []  # the checkpoint predates the writer's commit
    assert "is being written by pid" in caplog.text


def test_kglite_store_corrupt_write_ahead_log_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "g.kgl"
    with KgliteStore(path) as store:
        store.write([Statement(queries.get("ingest_triples"), TRIPLE)])
    Path(f"{path}-wal").write_bytes(b"garbage" * 30)
    with KgliteStore(path) as store, pytest.raises(StoreError, match="write-ahead log") as info:
        store.write([Statement(queries.get("ingest_triples"), TRIPLE)])
    assert "-wal" in (info.value.hint or "")
