"""Reader for delimited triple files: TSV (PathQuestion, WorldCup2014) and generic CSV/TSV.

Without a header every row is ``head<D>relation<D>tail``. With a header the three roles are found by
column name, so exports such as ``subject,predicate,object,source`` load without editing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ingest.readers.source_files import (
    CsvRows,
    base_suffix,
    column_index,
    open_source,
    require_file,
    sized_rows,
    triple_rows,
)
from kgqa.errors import IngestError
from kgqa.types import SourceItem

ROLES = ("head", "relation", "tail")
_CSV_SUFFIXES = (".csv",)


def read_tsv(
    path: str | Path,
    *,
    delimiter: str | None = None,
    header: bool | None = None,
    columns: Mapping[str, str] | None = None,
) -> Iterator[SourceItem]:
    """Stream the triples of a delimited file (format name ``tsv``).

    Fields are parsed by the ``csv`` module in strict mode: a field that *starts* with ``"`` is a
    quoted field (it may contain the delimiter or newlines); a ``"`` inside a field is literal, as in
    PathQuestion's ``David_\\"Buck\\"_Wheat``. Broken quoting is a ``BadLine``.

    Args:
        path: the file; ``.gz`` is decompressed on the fly.
        delimiter: one character; ``"\\t"`` (backslash-t, as typed on a command line) means tab.
            Default: ``,`` for ``.csv``/``.csv.gz`` files, tab otherwise.
        header: whether line 1 names the columns. Default: True when ``columns`` is given, else
            False (the PathQuestion and WorldCup2014 KBs have none).
        columns: maps roles ``head``/``relation``/``tail`` to header column names, e.g.
            ``{"head": "subject", "relation": "predicate", "tail": "object"}``; a role left out is
            looked up under its own name. Other header columns are ignored.

    Returns:
        A generator of ``TripleRecord`` (values verbatim) and ``BadLine`` (wrong field count, empty
        head/relation/tail, broken quoting, invalid UTF-8), numbered by physical line.

    Raises:
        IngestError: the file does not exist, an option is invalid (raised here, before iteration),
            or the header lacks a mapped column (raised on the first ``next()``).
    """
    source = require_file(path)
    if delimiter is None:
        delimiter = "," if base_suffix(source) in _CSV_SUFFIXES else "\t"
    return _read_delimited(source, delimiter=delimiter, header=header, columns=columns)


def read_csv(
    path: str | Path,
    *,
    delimiter: str = ",",
    header: bool | None = None,
    columns: Mapping[str, str] | None = None,
) -> Iterator[SourceItem]:
    """Same as :func:`read_tsv` with a comma as the default delimiter whatever the suffix (format ``csv``)."""
    return _read_delimited(require_file(path), delimiter=delimiter, header=header, columns=columns)


def _read_delimited(
    path: Path, *, delimiter: str, header: bool | None, columns: Mapping[str, str] | None
) -> Iterator[SourceItem]:
    delimiter = _check_delimiter(delimiter, path)
    names = _column_names(columns, path)
    has_header = header if header is not None else columns is not None
    if columns is not None and not has_header:
        raise IngestError(
            "a 'columns' mapping needs a header row", path=str(path), hint="drop header=False or the mapping"
        )
    return _iter_delimited(path, delimiter=delimiter, names=names if has_header else None)


def _iter_delimited(path: Path, *, delimiter: str, names: dict[str, str] | None) -> Iterator[SourceItem]:
    with open_source(path) as handle:
        rows = CsvRows(handle, path=path, delimiter=delimiter)
        picks: tuple[int, ...] = (0, 1, 2)
        labels: tuple[str, ...] = ROLES
        width = 3
        if names is not None:
            header_names = rows.header(required=tuple(dict.fromkeys(names[role] for role in ROLES)))
            index = column_index(header_names)
            width = len(header_names)
            picks = tuple(index[names[role]] for role in ROLES)
            labels = tuple(f"{role} (column {names[role]!r})" for role in ROLES)
        sized = sized_rows(rows, width, delimiter=delimiter, header=names is not None)
        yield from triple_rows(sized, picks, labels)


def _check_delimiter(delimiter: str, path: Path) -> str:
    if delimiter == "\\t":
        return "\t"
    if len(delimiter) != 1 or delimiter in '\r\n"':
        raise IngestError(
            f"delimiter must be one character other than a quote or newline, got {delimiter!r}",
            path=str(path),
            hint="use e.g. ',' or '\\t'",
        )
    return delimiter


def _column_names(columns: Mapping[str, str] | None, path: Path) -> dict[str, str]:
    names = {role: role for role in ROLES}
    if columns is None:
        return names
    unknown = sorted(set(columns) - set(ROLES))
    if unknown:
        raise IngestError(
            f"unknown key(s) in the columns mapping: {', '.join(unknown)}",
            path=str(path),
            hint="map only head, relation and tail to header column names",
        )
    names.update(columns)
    return names
