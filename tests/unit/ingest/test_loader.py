"""The loader: transactional batches, resume after interruption, idempotence, bad lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ingest.loader import batches, fingerprint, load
from kgqa.errors import IngestError, QueryError, StoreMemoryError
from kgqa.names import relationship_type
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.protocol import Statement
from kgqa.types import BadLine, EntityRecord, SourceItem, TripleRecord, WriteSummary

TRIPLES = [TripleRecord(f"film{i}", "directed_by", f"director{i % 7}", line=i + 1) for i in range(50)]


def _graph(store: KgliteStore) -> set[tuple[str, str, str]]:
    row = store.run(
        queries.get("subgraph_hop"),
        {
            "frontier_ids": [f"director{i}" for i in range(7)],
            "max_degree": 1000,
            "max_per_node": 1000,
            "max_triples": 1000,
        },
    )[0]
    return set(zip(row["h_ids"], row["r_types"], row["t_ids"], strict=True))


class CrashingStore:
    """Wraps a real store and fails the n-th write transaction, as a killed process would."""

    def __init__(self, inner: KgliteStore, fail_on_write: int) -> None:
        self.inner = inner
        self.backend, self.mapping = inner.backend, inner.mapping
        self.writes = 0
        self.fail_on_write = fail_on_write

    def run(self, query, params=None):  # type: ignore[no-untyped-def]
        return self.inner.run(query, params)

    def write(self, statements: Sequence[Statement]) -> list[WriteSummary]:
        self.writes += 1
        if self.writes == self.fail_on_write:
            raise KeyboardInterrupt("simulated crash")
        return self.inner.write(statements)


def test_batches_never_split_a_source_line() -> None:
    items: list[SourceItem] = [TripleRecord("a", "r", str(i), line=1 + i // 3) for i in range(10)]
    groups = list(batches(items, batch_size=2))
    for group in groups:
        assert len({i.line for i in group}) == len({i.line for i in group})
    lines_per_batch = [{i.line for i in g} for g in groups]
    for a, b in zip(lines_per_batch, lines_per_batch[1:], strict=False):
        assert max(a) < min(b)
    assert sum(len(g) for g in groups) == 10


def test_load_writes_all_triples_and_rerun_writes_nothing(kglite_store: KgliteStore) -> None:
    first = load(kglite_store, TRIPLES, source="s", fmt="t", source_key="k", batch_size=8)
    assert first.writes.relationships_created == 50
    assert first.writes.nodes_created == 50 + 7 + 1  # films, directors, one RelationType
    assert len(_graph(kglite_store)) == 50
    again = load(kglite_store, TRIPLES, source="s", fmt="t", source_key="k", batch_size=8)
    assert again.already_complete and again.writes.total == 0
    forced = load(kglite_store, TRIPLES, source="s", fmt="t", source_key="k", batch_size=8, force=True)
    assert not forced.already_complete
    assert forced.triple_records == 50 and forced.writes.total == 0


def test_load_resumes_after_interruption_without_duplicates(kglite_store: KgliteStore) -> None:
    crashing = CrashingStore(kglite_store, fail_on_write=4 + 1 + 4)  # schema (4), degree backfill, batches
    with pytest.raises(KeyboardInterrupt):
        load(crashing, TRIPLES, source="s", fmt="t", source_key="k", batch_size=10)  # type: ignore[arg-type]
    progress = kglite_store.run(queries.get("ingest_progress_get"), {"source_key": "k"})[0]
    assert progress["complete"] is False
    committed = progress["lines_done"]
    assert committed == 30  # three batches of 10 lines committed, the fourth never started
    assert len(_graph(kglite_store)) == 30
    resumed = load(kglite_store, TRIPLES, source="s", fmt="t", source_key="k", batch_size=10)
    assert resumed.resumed_after_line == 30
    assert resumed.triple_records == 20
    assert resumed.writes.relationships_created == 20
    assert len(_graph(kglite_store)) == 50


def test_failed_statement_rolls_back_its_whole_batch(kglite_store: KgliteStore) -> None:
    good = Statement(
        queries.get("ingest_triples"),
        {"rel_type": "DIRECTED_BY", "rows": [{"h": "x", "h_norm": "x", "t": "y", "t_norm": "y"}]},
    )
    broken = queries.parse_query(
        "// broken: x\n// returns: nothing\nMERGE (n:Entity {id: 'z'}) SET n. = 1\n",
        name="broken",
        path="broken.cypher",
    )
    bad = Statement(broken, {})
    with pytest.raises(QueryError):
        kglite_store.write([good, bad])
    assert kglite_store.run(queries.get("entities_get"), {"ids": ["x", "y", "z"]}) == []


def test_bad_line_fails_before_its_batch_is_written(kglite_store: KgliteStore) -> None:
    items: list[SourceItem] = [*TRIPLES[:10], BadLine(11, "expected 3 fields, got 2"), *TRIPLES[10:20]]
    with pytest.raises(IngestError, match=r"s:11: expected 3 fields"):
        load(kglite_store, items, source="s", fmt="t", source_key="k", batch_size=5)
    done = kglite_store.run(queries.get("ingest_progress_get"), {"source_key": "k"})[0]["lines_done"]
    assert done == 10
    assert len(_graph(kglite_store)) == 10


def test_bad_line_skipped_and_reported_with_on_error_skip(kglite_store: KgliteStore) -> None:
    items: list[SourceItem] = [*TRIPLES[:10], BadLine(11, "expected 3 fields, got 2"), *TRIPLES[10:20]]
    report = load(kglite_store, items, source="s", fmt="t", source_key="k", batch_size=5, on_error="skip")
    assert report.bad_lines == 1
    assert report.bad_line_examples == [{"line": 11, "message": "expected 3 fields, got 2"}]
    assert len(_graph(kglite_store)) == 20


def test_entity_records_set_names_labels_and_drop_stale_embeddings(kglite_store: KgliteStore) -> None:
    items: list[SourceItem] = [
        EntityRecord("14", "Lepirudin", line=2, label="drug"),
        EntityRecord("7", "F2", line=2, label="gene/protein"),
        TripleRecord("14", "target", "7", line=2),
    ]
    load(kglite_store, items, source="s", fmt="t", source_key="k")
    kglite_store.write(
        [
            Statement(
                queries.get("embed_set_entities"),
                {"model_id": "m", "rows": [{"id": "14", "embedding": [1.0, 0.0]}]},
            )
        ]
    )
    rows = kglite_store.run(queries.get("entities_get"), {"ids": ["14", "7"]})
    assert {r["id"]: r["name"] for r in rows} == {"14": "Lepirudin", "7": "F2"}
    labels = {r["label"]: r["count"] for r in kglite_store.run(queries.get("stats_labels"))}
    assert labels["Drug"] == 1 and labels["GeneProtein"] == 1 and labels["Entity"] == 2
    renamed = [EntityRecord("14", "Lepirudin (recombinant)", line=1, label="drug")]
    report = load(kglite_store, renamed, source="s2", fmt="t", source_key="k2")
    assert report.writes.labels_added == 0
    row = kglite_store.run(queries.get("entities_get"), {"ids": ["14"]})[0]
    assert row["name"] == "Lepirudin (recombinant)" and row["embedding"] is None


def test_relation_types_keep_the_verbatim_source_name(kglite_store: KgliteStore) -> None:
    items = [TripleRecord("m.01", "people.person.nationality", "m.02", line=1)]
    report = load(kglite_store, items, source="s", fmt="t", source_key="k")
    assert report.relation_types == 1
    rows = kglite_store.run(queries.get("relation_types_list"))
    assert [(r["name"], r["source_name"], r["text"]) for r in rows] == [
        (
            relationship_type("people.person.nationality"),
            "people.person.nationality",
            "person nationality",  # the domain, shared by all its relations, dropped
        )
    ]


def test_fingerprint_changes_with_content_not_path(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    a.write_text("x|r|y\n")
    b.write_text("x|r|y\n")
    c.write_text("x|r|z\n")
    assert fingerprint("metaqa", [a]) == fingerprint("metaqa", [b])
    assert fingerprint("metaqa", [a]) != fingerprint("metaqa", [c])
    assert fingerprint("metaqa", [a]) != fingerprint("tsv", [a])


def test_relation_types_stay_distinct_for_distinct_source_names(kglite_store: KgliteStore) -> None:
    names = ["has genre", "has-genre", "has.genre", "HAS_GENRE", "has_genre", "ümlaut_rel", "导演"]
    names.append("---")
    items = [TripleRecord(f"m{i}", name, f"g{i}", line=i + 1) for i, name in enumerate(names)]
    report = load(kglite_store, items, source="s", fmt="t", source_key="k", on_error="skip")
    assert report.relation_types == len(names) and report.bad_lines == 0
    rows = kglite_store.run(queries.get("relation_types_list"))
    by_source = {r["source_name"]: r["name"] for r in rows}
    assert set(by_source) == set(names) and len(set(by_source.values())) == len(names)
    assert by_source["has_genre"] == "HAS_GENRE" and by_source["ümlaut_rel"] == "ÜMLAUT_REL"
    assert by_source["导演"] == "导演" and by_source["has.genre"] == "HAS.GENRE"
    graph = kglite_store.run(
        queries.get("subgraph_hop"),
        {
            "frontier_ids": [f"m{i}" for i in range(len(names))],
            "max_degree": 10,
            "max_per_node": 1000,
            "max_triples": 100,
        },
    )[0]
    assert sorted(graph["r_types"]) == sorted(by_source.values())


def test_corrupt_gzip_loads_nothing_even_with_on_error_skip(
    kglite_store: KgliteStore, tmp_path: Path
) -> None:
    import gzip

    from ingest.readers import get_reader

    body = "".join(f"Film {i}|has_genre|Drama\n" for i in range(2_000)).encode()
    packed = bytearray(gzip.compress(body, compresslevel=0))
    packed[len(packed) // 2] ^= 0x55  # garbage text; only the CRC at the end notices
    source = tmp_path / "kb.txt.gz"
    source.write_bytes(bytes(packed))
    with pytest.raises(IngestError, match="truncated or corrupt"):
        load(
            kglite_store,
            get_reader("metaqa")(source),
            source=str(source),
            fmt="metaqa",
            source_key="k",
            batch_size=10,
            on_error="skip",
        )
    assert kglite_store.run(queries.get("relation_types_list")) == []
    assert kglite_store.run(queries.get("ingest_progress_get"), {"source_key": "k"}) == []


class SmallMemoryStore(CrashingStore):
    """A server whose transaction memory holds at most ``max_rows`` triple rows."""

    def __init__(self, inner: KgliteStore, max_rows: int) -> None:
        super().__init__(inner, fail_on_write=0)
        self.max_rows = max_rows
        self.refused: list[int] = []
        self.committed: list[int] = []

    def write(self, statements: Sequence[Statement]) -> list[WriteSummary]:
        rows = sum(len(st.params.get("rows", ())) for st in statements if st.query.name == "ingest_triples")
        if rows > self.max_rows:
            self.refused.append(rows)
            raise StoreMemoryError("Neo4j ran out of transaction memory")
        self.committed.append(rows)
        return super().write(statements)


def test_a_batch_the_server_has_no_memory_for_is_written_in_halves(kglite_store: KgliteStore) -> None:
    triples = [TripleRecord(f"h{i}", "rel", f"t{i}", line=1 + i // 2) for i in range(40)]  # 2 per line
    store = SmallMemoryStore(kglite_store, max_rows=12)

    report = load(store, triples, source="s", fmt="t", source_key="k", batch_size=40)

    assert store.refused[0] == 40 and all(rows <= 12 for rows in store.committed)
    assert sum(store.committed) == 40 and report.triple_records == 40
    assert report.writes.relationships_created == 40
    written = {f"h{i}": f"t{i}" for i in range(40)}
    rows = kglite_store.run(queries.get("entities_get"), {"ids": [*written, *written.values()]})
    assert len(rows) == 80
    progress = kglite_store.run(queries.get("ingest_progress_get"), {"source_key": "k"})[0]
    assert progress["lines_done"] == 20 and progress["complete"]


def test_one_line_too_big_for_the_server_is_a_store_memory_error(kglite_store: KgliteStore) -> None:
    triples = [TripleRecord("h", "rel", f"t{i}", line=1) for i in range(5)]  # one source line
    with pytest.raises(StoreMemoryError):
        load(SmallMemoryStore(kglite_store, max_rows=2), triples, source="s", fmt="t", source_key="k")
