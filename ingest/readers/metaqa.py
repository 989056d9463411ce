"""Reader for the MetaQA (WikiMovies) KB: ``kb.txt[.gz]`` with one ``head|relation|tail`` per line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ingest.readers.source_files import parsed_lines, require_file, snippet
from kgqa.types import BadLine, SourceItem, TripleRecord

_SEPARATOR = "|"
_ROLES = ("head", "relation", "tail")


def read_metaqa(path: str | Path) -> Iterator[SourceItem]:
    """Stream the triples of a MetaQA KB file.

    MetaQA names entities by their surface string (movie titles are not unique even in the original
    data), so the string is the entity id and the loader names the node by it; no ``EntityRecord``
    is yielded. Blank lines are skipped silently because the published ``kb.txt`` ends with some.

    Args:
        path: ``kb.txt`` or ``kb.txt.gz``.

    Returns:
        A generator of ``TripleRecord`` (relation verbatim, e.g. ``directed_by``) and ``BadLine`` for
        a line without exactly three non-empty ``|``-separated fields. ``line`` is the physical line.

    Raises:
        IngestError: the file does not exist (raised here, before iteration) or is corrupt.
    """
    return parsed_lines(require_file(path), _parse_line)


def _parse_line(line: int, text: str) -> Iterator[SourceItem]:
    fields = text.split(_SEPARATOR)
    if len(fields) == 3 and all(fields):
        yield TripleRecord(fields[0], fields[1], fields[2], line)
    elif len(fields) != 3:
        yield BadLine(line, f"expected 3 '|'-separated fields, got {len(fields)}: {snippet(text)}")
    else:
        yield BadLine(line, f"empty {_ROLES[fields.index('')]} field: {snippet(text)}")
