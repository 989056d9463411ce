"""Opening source files and walking them line by line, shared by every reader.

All readers number items by *physical* line of the file (1-based, a header counts as line 1), so a
``BadLine`` or ``IngestError`` points at the line a user would open in an editor. Files are decoded
as UTF-8 with ``surrogateescape``: an undecodable byte becomes a ``BadLine`` for its own line
instead of an exception that would end the whole load.
"""

from __future__ import annotations

import csv
import gzip
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from kgqa.errors import IngestError
from kgqa.gzip_check import READ_ERRORS, check_gzip, is_gzip
from kgqa.types import BadLine, SourceItem, TripleRecord

_UNDECODABLE = re.compile("[\udc80-\udcff]")
_SNIPPET_CHARS = 60


def base_suffix(path: Path) -> str:
    """The suffix that names the format, looking through ``.gz``: ``kg.csv.gz`` -> ``.csv``."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def require_file(path: str | Path) -> Path:
    """Check, before any reading starts, that ``path`` is an existing regular file.

    Readers call this eagerly so that a wrong path fails when the reader is created, not after the
    loader has opened a store transaction. A ``.gz`` file is decompressed once here to check it:
    gzip verifies its CRC only at the end of the stream, so a corrupt file first decompresses to
    garbage lines that a load would commit, batch after batch, before the error shows.

    Raises:
        IngestError: the path does not exist, is a directory, or is a corrupt or truncated ``.gz``.
    """
    resolved = Path(path)
    if not resolved.exists():
        raise IngestError("source file not found", path=str(resolved), hint="check the path and its suffix")
    if resolved.is_dir():
        raise IngestError("expected a file, got a directory", path=str(resolved))
    if is_gzip(resolved):
        check_gzip(resolved, what="source file")
    return resolved


def open_source(path: Path) -> TextIO:
    """Open a source file for streaming text reads (gzip when the suffix is ``.gz``).

    Lines end only at ``\\n`` (``\\r\\n`` is kept for the csv module to handle), so line numbers match
    ``wc -l`` and editors; a UTF-8 byte-order mark is dropped.

    Raises:
        IngestError: the file cannot be opened.
    """
    try:
        if is_gzip(path):
            return gzip.open(path, "rt", encoding="utf-8-sig", errors="surrogateescape", newline="\n")
        return path.open(encoding="utf-8-sig", errors="surrogateescape", newline="\n")
    except OSError as exc:
        raise IngestError(f"cannot open source file: {exc.strerror or exc}", path=str(path)) from exc


def undecodable(text: str) -> str | None:
    """A message naming the first byte that is not valid UTF-8, or None when the text is clean."""
    if text.isascii():
        return None
    match = _UNDECODABLE.search(text)
    if match is None:
        return None
    byte = ord(match.group()) - 0xDC00
    return f"invalid UTF-8 (byte 0x{byte:02x} at character {match.start() + 1})"


def snippet(text: str) -> str:
    """A short quoted excerpt of a bad line for a message, so the user recognises it."""
    if len(text) > _SNIPPET_CHARS:
        text = text[:_SNIPPET_CHARS] + "..."
    return repr(text)


def describe_delimiter(delimiter: str) -> str:
    """How messages name a delimiter: ``tab-separated``, ``','-separated``."""
    return "tab-separated" if delimiter == "\t" else f"{delimiter!r}-separated"


def field_count_problem(expected: int, got: int, *, delimiter: str, header: bool) -> str:
    """The ``BadLine`` message for a row with the wrong number of fields."""
    where = " as in the header" if header else ""
    return f"expected {expected} {describe_delimiter(delimiter)} fields{where}, got {got}"


def numbered_lines(handle: TextIO, *, path: Path) -> Iterator[tuple[int, str] | BadLine]:
    """Yield ``(line_number, text)`` for each physical line, without its line terminator.

    Lines that are not valid UTF-8 come out as ``BadLine`` instead.

    Raises:
        IngestError: the file is truncated or corrupt (e.g. a cut-off ``.gz``).
    """
    line_number = 0
    while True:
        try:
            raw = next(handle)
        except StopIteration:
            return
        except READ_ERRORS as exc:
            raise _read_error(path, line_number + 1, exc) from exc
        line_number += 1
        text = raw.rstrip("\r\n")
        problem = undecodable(text)
        yield BadLine(line_number, problem) if problem else (line_number, text)


def parsed_lines(path: Path, parse: Callable[[int, str], Iterable[SourceItem]]) -> Iterator[SourceItem]:
    """The items ``parse(line_number, text)`` makes of each non-blank line of a line-based file,
    with undecodable lines as ``BadLine``: the loop every line reader shares.

    Raises:
        IngestError: the file is truncated or corrupt (e.g. a cut-off ``.gz``).
    """
    with open_source(path) as handle:
        for item in numbered_lines(handle, path=path):
            if isinstance(item, BadLine):
                yield item
            elif item[1].strip():
                yield from parse(*item)


class CsvRows:
    """Iterator over the rows of a delimited file: ``(line, fields)`` or ``BadLine``.

    ``line`` is the physical line where the row starts (a quoted field may span lines) plus
    ``line_offset``. Blank lines are skipped. The parser runs in ``strict`` mode, so broken quoting
    becomes a ``BadLine`` instead of silently merging fields. A class rather than a generator so the
    caller can ask how many physical lines were consumed (``lines_read``) after the last row.
    """

    def __init__(self, handle: TextIO, *, path: Path, delimiter: str, line_offset: int = 0) -> None:
        self._reader = csv.reader(handle, delimiter=delimiter, strict=True)
        self._path = path
        self._offset = line_offset

    @property
    def lines_read(self) -> int:
        """Physical lines consumed so far, without the offset."""
        return self._reader.line_num

    def __iter__(self) -> CsvRows:
        return self

    def __next__(self) -> tuple[int, list[str]] | BadLine:
        while True:
            start = self._reader.line_num + 1
            try:
                fields = next(self._reader)
            except csv.Error as exc:
                return BadLine(start + self._offset, f"malformed CSV: {exc}")
            except READ_ERRORS as exc:
                raise _read_error(self._path, start, exc) from exc
            if not fields:
                continue
            if not "".join(fields).isascii():  # one C-level check per row; per-field only when needed
                for position, field in enumerate(fields, start=1):
                    problem = undecodable(field)
                    if problem:
                        return BadLine(start + self._offset, f"field {position}: {problem}")
            return start + self._offset, fields

    def header(self, *, required: tuple[str, ...]) -> list[str]:
        """Read the header row and check it names every required column.

        Args:
            required: column names the reader cannot work without.

        Returns:
            The column names in file order, stripped of surrounding spaces; rows must have as many fields.

        Raises:
            IngestError: the file is empty, the header is unparsable, or a required column is missing.
        """
        item = next(self, None)
        if item is None:
            raise IngestError(
                f"file is empty; expected a header with columns {', '.join(required)}", path=str(self._path)
            )
        if isinstance(item, BadLine):
            raise IngestError(f"unreadable header: {item.message}", path=str(self._path), line=item.line)
        line, fields = item
        names = [name.strip() for name in fields]
        missing = [name for name in required if name not in names]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            raise IngestError(
                f"header lacks required column{plural} {', '.join(map(repr, missing))}"
                f" (found: {', '.join(map(repr, fields))})",
                path=str(self._path),
                line=line - self._offset,
                hint=f"the header must name the columns {', '.join(required)}",
            )
        return names


def column_index(names: list[str]) -> dict[str, int]:
    """Column name -> 0-based field index; the first column wins when a name repeats."""
    index: dict[str, int] = {}
    for position, name in enumerate(names):
        index.setdefault(name, position)
    return index


def is_blank(fields: list[str]) -> bool:
    """True for a row with nothing but whitespace; checked only on the error path, to stay cheap."""
    return not any(field.strip() for field in fields)


def sized_rows(
    rows: Iterable[tuple[int, list[str]] | BadLine], width: int, *, delimiter: str, header: bool
) -> Iterator[tuple[int, list[str]] | BadLine]:
    """Pass BadLines through, drop blank rows, and turn rows of the wrong width into BadLines.

    Every delimited reader needs exactly this before looking at fields by position.
    """
    for item in rows:
        if isinstance(item, BadLine) or len(item[1]) == width:
            yield item
        elif not is_blank(item[1]):
            yield BadLine(
                item[0], field_count_problem(width, len(item[1]), delimiter=delimiter, header=header)
            )


def triple_rows(
    rows: Iterable[tuple[int, list[str]] | BadLine], at: Sequence[int], labels: Sequence[str]
) -> Iterator[SourceItem]:
    """The (head, relation, tail) fields at the three positions ``at`` of sized rows as
    ``TripleRecord``s.

    BadLines pass through; a row with one of the three empty is a BadLine naming it from
    ``labels``; a blank row is dropped.
    """
    for item in rows:
        if isinstance(item, BadLine):
            yield item
            continue
        line, fields = item
        head, relation, tail = (fields[i] for i in at)
        if head and relation and tail:
            yield TripleRecord(head, relation, tail, line)
        elif not is_blank(fields):
            yield BadLine(line, f"empty {labels[(head, relation, tail).index('')]}")


def _read_error(path: Path, line: int, exc: BaseException) -> IngestError:
    return IngestError(
        f"source file is truncated or corrupt: {exc}",
        path=str(path),
        line=line,
        hint="the file changed or failed while being read; batches committed before this line are "
        "kept and the same command resumes after them",
    )
