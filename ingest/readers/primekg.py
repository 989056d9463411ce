"""Reader for PrimeKG's ``kg.csv``: one typed, named edge per row between two typed, named nodes.

Header (12 columns)::

    relation,display_relation,x_index,x_id,x_type,x_name,x_source,y_index,y_id,y_type,y_name,y_source

``x_index``/``y_index`` are PrimeKG's global node indices and become the entity ids: ``x_id`` is only
unique within its ``x_source`` (a DrugBank id and an NCBI gene id may collide). ``display_relation``
is a coarser human label of ``relation`` and is dropped, like ``*_id`` and ``*_source``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ingest.readers.source_files import (
    CsvRows,
    column_index,
    open_source,
    require_file,
    sized_rows,
)
from kgqa.types import BadLine, EntityRecord, SourceItem, TripleRecord

COLUMNS = (
    "relation",
    "display_relation",
    "x_index",
    "x_id",
    "x_type",
    "x_name",
    "x_source",
    "y_index",
    "y_id",
    "y_type",
    "y_name",
    "y_source",
)
# The columns the reader uses; the others may be absent without harm.
REQUIRED = ("relation", "x_index", "x_type", "x_name", "y_index", "y_type", "y_name")


def read_primekg(path: str | Path, *, dedupe_entities: bool = True) -> Iterator[SourceItem]:
    """Stream PrimeKG nodes and edges from ``kg.csv[.gz]``.

    Per row: ``EntityRecord(x_index, x_name, label=x_type)``, the same for y, then
    ``TripleRecord(x_index, relation, y_index)``. Types (``gene/protein``, ``effect/phenotype``) and
    relations (``protein_protein``, ``indication``) are verbatim; the loader sanitises them.

    Args:
        path: ``kg.csv`` or ``kg.csv.gz``.
        dedupe_entities: yield each node's ``EntityRecord`` only on the first row that mentions it.
            PrimeKG has ~8M rows but ~130k nodes, so this spares the loader ~16M redundant
            ``MERGE``s for a set of ~130k ids in memory. Safe with resume: a node's first row is
            always committed before any later row. False repeats both records on every row.

    Returns:
        A generator of ``EntityRecord``, ``TripleRecord`` and ``BadLine`` (wrong field count, empty
        index or relation, broken quoting) numbered by physical line; the header is line 1.

    Raises:
        IngestError: the file does not exist (raised here) or, on the first ``next()``, the header
            lacks a required column (named in the message).
    """
    return _iter_primekg(require_file(path), dedupe_entities=dedupe_entities)


def _iter_primekg(path: Path, *, dedupe_entities: bool) -> Iterator[SourceItem]:
    seen: set[str] = set()
    with open_source(path) as handle:
        rows = CsvRows(handle, path=path, delimiter=",")
        names = rows.header(required=REQUIRED)
        index = column_index(names)
        width = len(names)
        relation_at = index["relation"]
        x_at = (index["x_index"], index["x_name"], index["x_type"])
        y_at = (index["y_index"], index["y_name"], index["y_type"])
        for item in sized_rows(rows, width, delimiter=",", header=True):
            if isinstance(item, BadLine):
                yield item
                continue
            line, fields = item
            relation, x_id, y_id = fields[relation_at], fields[x_at[0]], fields[y_at[0]]
            if not (relation and x_id and y_id):
                empty = "relation" if not relation else ("x_index" if not x_id else "y_index")
                yield BadLine(line, f"empty {empty}")
                continue
            for node_id, (_, name_at, type_at) in ((x_id, x_at), (y_id, y_at)):
                if dedupe_entities:
                    if node_id in seen:
                        continue
                    seen.add(node_id)
                yield EntityRecord(node_id, fields[name_at] or node_id, line, label=fields[type_at] or None)
            yield TripleRecord(x_id, relation, y_id, line)
