"""Batched, transactional, resumable writes of a reader's record stream into a graph store.

Every batch (about ``batch_size`` records, never splitting a source line) is written in ONE
transaction together with the resume point (the last source line it covers), so an interrupted
load never leaves a half-written batch and restarts right after the last committed one. Every
write creates only what is missing: re-running a load creates nothing new. A batch the server has
no memory for (``StoreMemoryError``) is written as two halves, each halved again if need be,
instead of being retried as it is. Rows out of heads with many relationships are checked
against their pairs read once per load (ingest.heavy_heads), not probed one by one. A load ends
by refreshing the hub slices its new relationships made stale (ingest.slices).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ingest.heavy_heads import HEAVY_OUT_DEGREE, HeavyHeads
from ingest.slices import refresh_slices
from kgqa.config import RETRIEVAL_DEFAULTS
from kgqa.errors import IngestError, StoreMemoryError
from kgqa.names import label_name, normalise_name, relation_text, relationship_type
from kgqa.store import queries
from kgqa.store.protocol import GraphStore, Statement
from kgqa.store.schema import ensure_constraints
from kgqa.types import BadLine, EntityRecord, SourceItem, TripleRecord, WriteSummary

log = logging.getLogger(__name__)

OnError = Literal["skip", "fail"]
MAX_REPORTED_BAD_LINES = 20


@dataclass(slots=True)
class IngestReport:
    """Outcome of one ``kgqa ingest`` run (also its JSON output)."""

    source: str
    format: str
    source_key: str
    lines: int = 0
    entity_records: int = 0
    triple_records: int = 0
    relation_types: int = 0
    bad_lines: int = 0
    bad_line_examples: list[dict[str, Any]] = field(default_factory=list)
    writes: WriteSummary = field(default_factory=WriteSummary)
    resumed_after_line: int = 0
    already_complete: bool = False
    slices_built: int = 0
    seconds: float = 0.0

    @property
    def triples_per_second(self) -> float:
        return self.triple_records / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "source_key": self.source_key,
            "lines": self.lines,
            "entity_records": self.entity_records,
            "triple_records": self.triple_records,
            "relation_types": self.relation_types,
            "bad_lines": self.bad_lines,
            "bad_line_examples": self.bad_line_examples,
            "nodes_created": self.writes.nodes_created,
            "relationships_created": self.writes.relationships_created,
            "properties_set": self.writes.properties_set,
            "labels_added": self.writes.labels_added,
            "new_writes": self.writes.total,
            "resumed_after_line": self.resumed_after_line,
            "already_complete": self.already_complete,
            "slices_built": self.slices_built,
            "seconds": round(self.seconds, 3),
            "triples_per_second": round(self.triples_per_second, 1),
        }


def fingerprint(fmt: str, paths: Sequence[Path], options: dict[str, Any] | None = None) -> str:
    """Key of a source: format, reader options and the full contents of its files.

    A changed file gets a new key (and a fresh, still idempotent, load); the same file under
    another path resumes the same load.
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(fmt.encode())
    digest.update(repr(sorted((options or {}).items())).encode())
    for path in paths:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    return f"{fmt}:{digest.hexdigest()}"


def batches(items: Iterable[SourceItem], batch_size: int) -> Iterator[list[SourceItem]]:
    """Group items into lists of about ``batch_size``, cutting only between source lines."""
    batch: list[SourceItem] = []
    for item in items:
        if len(batch) >= batch_size and item.line != batch[-1].line:
            yield batch
            batch = []
        batch.append(item)
    if batch:
        yield batch


def _entity_statements(entities: list[EntityRecord]) -> list[Statement]:
    latest = {e.id: e for e in entities}
    rows = [
        {"id": e.id, "name": e.name, "name_norm": normalise_name(e.name), "text": e.text}
        for e in latest.values()
    ]
    statements = [Statement(queries.get("ingest_entities"), {"rows": rows})] if rows else []
    by_label: dict[str, list[str]] = defaultdict(list)
    for e in latest.values():
        if e.label:
            by_label[label_name(e.label)].append(e.id)
    statements += [
        Statement(queries.get("ingest_entity_labels"), {"label": label, "ids": ids})
        for label, ids in sorted(by_label.items())
    ]
    return statements


def _triple_statements(
    triples: list[TripleRecord], known_types: dict[str, str], heavy: HeavyHeads
) -> tuple[list[Statement], list[tuple[str, str, str]]]:
    """The batch's triple statements, and the (head, type, tail) triples they create out of known
    heavy heads (to record once the batch commits). Rows out of a heavy head skip the per-row
    probe: those already in the graph are dropped, the rest go to ``ingest_triples_absent``."""
    probed: dict[str, dict[tuple[str, str], dict[str, str]]] = defaultdict(dict)
    absent: dict[str, dict[tuple[str, str], dict[str, str]]] = defaultdict(dict)
    new_types: dict[str, str] = {}
    for t in triples:
        rel_type = relationship_type(t.relation)
        if rel_type not in known_types:
            known_types[rel_type] = new_types[rel_type] = t.relation
        exists = heavy.exists(t.head, rel_type, t.tail)
        if exists:
            continue
        target = probed if exists is None else absent
        target[rel_type][(t.head, t.tail)] = {
            "h": t.head,
            "h_norm": normalise_name(t.head),
            "t": t.tail,
            "t_norm": normalise_name(t.tail),
        }
    statements = [
        Statement(queries.get(kernel), {"rel_type": rel_type, "rows": list(rows.values())})
        for kernel, by_type in (("ingest_triples", probed), ("ingest_triples_absent", absent))
        for rel_type, rows in sorted(by_type.items())
    ]
    if new_types:
        rows = [{"name": n, "source_name": s, "text": relation_text(s)} for n, s in sorted(new_types.items())]
        statements.append(Statement(queries.get("ingest_relation_types"), {"rows": rows}))
    created = [(h, rel_type, t) for rel_type, rows in absent.items() for h, t in rows]
    return statements, created


def _progress(key: str, source: str, lines_done: int, complete: bool) -> Statement:
    params = {"source_key": key, "source": source, "lines_done": lines_done, "complete": complete}
    return Statement(queries.get("ingest_progress_set"), params)


def _split(
    batch: list[SourceItem], report: IngestReport, on_error: OnError, path: str
) -> tuple[list[EntityRecord], list[TripleRecord]]:
    entities: list[EntityRecord] = []
    triples: list[TripleRecord] = []
    for item in batch:
        if isinstance(item, BadLine):
            if on_error == "fail":
                raise IngestError(
                    item.message,
                    path=path,
                    line=item.line,
                    hint="fix the line, or pass --on-error skip; the batches before it are "
                    "committed and a re-run resumes after them",
                )
            report.bad_lines += 1
            if len(report.bad_line_examples) < MAX_REPORTED_BAD_LINES:
                report.bad_line_examples.append({"line": item.line, "message": item.message})
            log.warning("%s:%d: skipped: %s", path, item.line, item.message)
        elif isinstance(item, EntityRecord):
            entities.append(item)
        else:
            triples.append(item)
    return entities, triples


def _half(items: list[EntityRecord | TripleRecord]) -> int | None:
    """An index near the middle of ``items`` where a new source line starts; None for one line."""
    mid = len(items) // 2
    cuts = [i for i in range(1, len(items)) if items[i].line != items[i - 1].line]
    return min(cuts, key=lambda i: abs(i - mid)) if cuts else None


def _write_batch(
    store: GraphStore,
    records: list[EntityRecord | TripleRecord],
    *,
    last_line: int,
    source: str,
    source_key: str,
    known_types: dict[str, str],
    heavy: HeavyHeads,
) -> WriteSummary:
    """Write ``records`` and the resume point ``last_line`` in one transaction.

    On ``StoreMemoryError`` the records are written as two halves cut between source lines, the
    first with its own resume point, so what is committed is always a prefix of the source.

    Raises:
        StoreMemoryError: one source line alone does not fit the server's transaction memory.
    """
    entities = [r for r in records if isinstance(r, EntityRecord)]
    triples = [r for r in records if isinstance(r, TripleRecord)]
    types_before = dict(known_types)
    heavy.update(t.head for t in triples)
    triple_statements, created_out_of_heavy = _triple_statements(triples, known_types, heavy)
    statements = _entity_statements(entities) + triple_statements
    statements.append(_progress(source_key, source, last_line, complete=False))
    try:
        *data_writes, _bookkeeping = store.write(statements)
    except StoreMemoryError:
        known_types.clear()
        known_types.update(types_before)  # the relation types of a failed batch were not written
        cut = _half(records)
        if cut is None:
            raise
        log.warning("batch of %d records exceeds the server's memory; writing it in two halves", len(records))
        first = _write_batch(
            store,
            records[:cut],
            last_line=records[cut - 1].line,
            source=source,
            source_key=source_key,
            known_types=known_types,
            heavy=heavy,
        )
        rest = _write_batch(
            store,
            records[cut:],
            last_line=last_line,
            source=source,
            source_key=source_key,
            known_types=known_types,
            heavy=heavy,
        )
        return first + rest
    heavy.add(created_out_of_heavy)
    return sum(data_writes, WriteSummary())


def load(
    store: GraphStore,
    items: Iterable[SourceItem],
    *,
    source: str,
    fmt: str,
    source_key: str,
    batch_size: int = 20_000,
    on_error: OnError = "fail",
    force: bool = False,
    on_batch: Callable[[int], None] | None = None,
    slice_cap: int = RETRIEVAL_DEFAULTS.max_per_node,
    heavy_out_degree: int = HEAVY_OUT_DEGREE,
) -> IngestReport:
    """Write a record stream into ``store``, resuming an earlier interrupted load of the same source.

    Args:
        store: target graph store.
        items: the reader's stream (``line`` non-decreasing).
        source: the path as the user gave it (for messages and the progress record).
        fmt: reader format name.
        source_key: ``fingerprint(...)`` of the source.
        batch_size: records per transaction (a source line is never split).
        on_error: ``"fail"`` stops at the first malformed line before writing its batch;
            ``"skip"`` logs it and goes on.
        force: re-merge a source already recorded as complete (still creates nothing new).
        on_batch: called with the last line of each committed batch (progress bars).
        slice_cap: the per-node cap hub slices are built for (``retrieval.max_per_node``).
        heavy_out_degree: outgoing relationships from which a head's existing pairs are read once
            and kept (ingest.heavy_heads) instead of probed per row.

    Raises:
        IngestError: a malformed line with ``on_error="fail"``, or a source with no lines.
    """
    started = time.perf_counter()
    report = IngestReport(source=source, format=fmt, source_key=source_key)
    ensure_constraints(store)
    store.write([Statement(queries.get("ingest_degrees_backfill"), {})])
    progress = store.run(queries.get("ingest_progress_get"), {"source_key": source_key})
    if progress and progress[0]["complete"] and not force:
        report.already_complete = True
        report.slices_built = refresh_slices(store, slice_cap)  # a store from before slices, or a new cap
        report.seconds = time.perf_counter() - started
        return report
    done = int(progress[0]["lines_done"] or 0) if progress and not force else 0
    report.resumed_after_line = done
    known_types = {row["name"]: row["source_name"] for row in store.run(queries.get("relation_types_list"))}
    types_before = len(known_types)
    heavy = HeavyHeads(store, heavy_out_degree)
    last_line = done
    for batch in batches((i for i in items if i.line > done), batch_size):
        entities, triples = _split(batch, report, on_error, source)
        last_line = batch[-1].line
        records: list[EntityRecord | TripleRecord] = [i for i in batch if not isinstance(i, BadLine)]
        report.writes += _write_batch(
            store,
            records,
            last_line=last_line,
            source=source,
            source_key=source_key,
            known_types=known_types,
            heavy=heavy,
        )
        report.entity_records += len(entities)
        report.triple_records += len(triples)
        if on_batch:
            on_batch(last_line)
    if last_line == 0:
        raise IngestError(
            "no records to load: the source is empty", path=source, hint="check the file and --format"
        )
    report.slices_built = refresh_slices(store, slice_cap)
    store.write([_progress(source_key, source, last_line, complete=True)])
    report.lines = last_line
    report.relation_types = len(known_types) - types_before
    report.seconds = time.perf_counter() - started
    return report
