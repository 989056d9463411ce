"""Reader for text-rich typed graphs (MAG-like) given as a nodes CSV plus an edges CSV.

``nodes.csv`` has the header ``id,type,name,text`` (``text`` optional, extra columns ignored) and
``edges.csv`` the header ``src,type,dst``. Both are read as one stream, nodes first, so every node
has its name, type and text before an edge mentions it.

Line numbers: node rows carry their physical line in the nodes file (header = line 1, first node
row = 2). Edge rows carry ``N + physical line in the edges file``, where ``N`` is the number of
physical lines of the nodes file, so the stream stays monotone for the loader's resume. Edge
``BadLine`` messages start with ``<edges file name> line <physical line>:`` so the user can still
find the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ingest.readers.source_files import (
    CsvRows,
    column_index,
    is_blank,
    open_source,
    require_file,
    sized_rows,
    triple_rows,
)
from kgqa.errors import IngestError
from kgqa.types import BadLine, EntityRecord, SourceItem

NODE_COLUMNS = ("id", "type", "name")
EDGE_COLUMNS = ("src", "type", "dst")
_DIR_CANDIDATES = (".csv", ".csv.gz")


def read_typed_csv(source: str | Path, *, edges: str | Path | None = None) -> Iterator[SourceItem]:
    """Stream the nodes, then the edges, of a nodes/edges CSV pair.

    Node rows yield ``EntityRecord(id, name or id, label=type or None, text=text or None)``; edge rows
    yield ``TripleRecord(src, type, dst)``. Types are verbatim (``paper``, ``field_of_study``).

    Args:
        source: the nodes file, or a directory holding ``nodes.csv[.gz]`` and ``edges.csv[.gz]``.
        edges: the edges file; by default ``edges.csv[.gz]`` in the directory, or the nodes file's
            sibling with ``nodes`` replaced by ``edges`` in its name (``mag_nodes.csv`` ->
            ``mag_edges.csv``).

    Returns:
        A generator of ``EntityRecord``, ``TripleRecord`` and ``BadLine``; see the module docstring
        for line numbers.

    Raises:
        IngestError: a file cannot be found (raised here, before iteration) or, on first reaching it,
            a header lacks a required column.
    """
    nodes_path, edges_path = resolve_paths(source, edges=edges)
    return _iter_typed_csv(nodes_path, edges_path)


def resolve_paths(source: str | Path, *, edges: str | Path | None = None) -> tuple[Path, Path]:
    """The (nodes, edges) files ``read_typed_csv`` will read, for callers that fingerprint inputs.

    Raises:
        IngestError: either file is missing, or no edges file can be inferred.
    """
    source = Path(source)
    if source.is_dir():
        nodes_path = _in_directory(source, "nodes")
        edges_path = require_file(edges) if edges is not None else _in_directory(source, "edges")
        return nodes_path, edges_path
    nodes_path = require_file(source)
    if edges is not None:
        return nodes_path, require_file(edges)
    if "nodes" not in nodes_path.name:
        raise IngestError(
            "cannot infer the edges file: the nodes file name does not contain 'nodes'",
            path=str(nodes_path),
            hint="pass the edges file explicitly (--edges PATH)",
        )
    head, _, tail = nodes_path.name.rpartition("nodes")
    sibling = nodes_path.with_name(f"{head}edges{tail}")
    if not sibling.is_file():
        raise IngestError(
            f"edges file {sibling.name!r} not found next to the nodes file",
            path=str(nodes_path),
            hint="pass the edges file explicitly (--edges PATH)",
        )
    return nodes_path, sibling


def _in_directory(directory: Path, stem: str) -> Path:
    for suffix in _DIR_CANDIDATES:
        candidate = directory / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    raise IngestError(
        f"directory has no {stem}.csv or {stem}.csv.gz",
        path=str(directory),
        hint="name the files nodes.csv and edges.csv, or pass the nodes file and --edges PATH",
    )


def _iter_typed_csv(nodes_path: Path, edges_path: Path) -> Iterator[SourceItem]:
    with open_source(nodes_path) as handle:
        rows = CsvRows(handle, path=nodes_path, delimiter=",")
        yield from _node_items(rows)
        offset = rows.lines_read
    with open_source(edges_path) as handle:
        rows = CsvRows(handle, path=edges_path, delimiter=",", line_offset=offset)
        for item in _edge_items(rows):
            if isinstance(item, BadLine):
                item = BadLine(item.line, f"{edges_path.name} line {item.line - offset}: {item.message}")
            yield item


def _node_items(rows: CsvRows) -> Iterator[SourceItem]:
    """Node rows as ``EntityRecord``; a row whose id an earlier row gave another type is a
    ``BadLine`` (the store keeps one node per id, so one of the two would silently lose its
    type, name and text)."""
    names = rows.header(required=NODE_COLUMNS)
    index = column_index(names)
    width = len(names)
    id_at, type_at, name_at = (index[column] for column in NODE_COLUMNS)
    text_at = index.get("text")
    first: dict[str, tuple[str, int]] = {}  # node id -> (type, line) where it was first read
    for item in sized_rows(rows, width, delimiter=",", header=True):
        if isinstance(item, BadLine):
            yield item
            continue
        line, fields = item
        node_id = fields[id_at]
        if not node_id:
            if not is_blank(fields):
                yield BadLine(line, "empty id")
            continue
        node_type = fields[type_at]
        seen_type, seen_line = first.setdefault(node_id, (node_type, line))
        if seen_type != node_type:
            yield BadLine(
                line, f"node id {node_id!r} has type {node_type!r} here but {seen_type!r} on line {seen_line}"
            )
            continue
        text = fields[text_at] if text_at is not None else ""
        yield EntityRecord(
            node_id, fields[name_at] or node_id, line, label=node_type or None, text=text or None
        )


def _edge_items(rows: CsvRows) -> Iterator[SourceItem]:
    names = rows.header(required=EDGE_COLUMNS)
    index = column_index(names)
    width = len(names)
    src_at, type_at, dst_at = (index[column] for column in EDGE_COLUMNS)
    yield from triple_rows(
        sized_rows(rows, width, delimiter=",", header=True), (src_at, type_at, dst_at), EDGE_COLUMNS
    )
