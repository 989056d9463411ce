"""Source-format readers: each turns one source file into a stream of ``SourceItem`` records.

A reader is a function ``reader(path, *, **options) -> Iterator[SourceItem]`` that checks its path
and options eagerly and returns a generator; it never writes anything. Items carry the physical
line they came from (monotone non-decreasing, header lines counted), so the loader can batch whole
lines and resume after the last committed one. Malformed lines become ``BadLine`` items, never
exceptions; ``IngestError`` is raised only when the input as a whole is unusable.

Usage::

    read = get_reader("tsv", delimiter=",", columns={"head": "subject"})
    for item in read(Path("triples.csv")):
        ...
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from ingest.readers.delimited import read_csv, read_tsv
from ingest.readers.metaqa import read_metaqa
from ingest.readers.primekg import read_primekg
from ingest.readers.rog import read_rog_jsonl
from ingest.readers.typed_csv import read_typed_csv, resolve_paths
from kgqa.errors import IngestError
from kgqa.types import SourceItem

__all__ = ["READERS", "SourceReader", "get_reader", "source_paths"]


class SourceReader(Protocol):
    """A reader with its options bound: call it with the source path to get the item stream."""

    def __call__(self, path: str | Path, /) -> Iterator[SourceItem]: ...


READERS: dict[str, Callable[..., Iterator[SourceItem]]] = {
    "metaqa": read_metaqa,
    "tsv": read_tsv,
    "csv": read_csv,
    "rog-jsonl": read_rog_jsonl,
    "primekg": read_primekg,
    "typed-csv": read_typed_csv,
}


def get_reader(fmt: str, **options: Any) -> SourceReader:
    """The reader for a format name, with its keyword options bound.

    Options are checked against the reader's signature here, so a typo fails before any file is
    opened rather than as a ``TypeError`` mid-load.

    Args:
        fmt: one of ``READERS`` (``metaqa``, ``tsv``, ``csv``, ``rog-jsonl``, ``primekg``, ``typed-csv``).
        **options: the reader's keyword-only options, e.g. ``delimiter=","`` for ``tsv``.

    Returns:
        A callable taking the source path and returning the item generator.

    Raises:
        IngestError: unknown format (the message lists the known ones) or an option the format
            does not take (the message lists the ones it does).
    """
    try:
        reader = READERS[fmt]
    except KeyError:
        raise IngestError(
            f"unknown source format {fmt!r}; known formats: {', '.join(sorted(READERS))}",
            hint="pass one of the known formats to --format",
        ) from None
    accepted = [
        name
        for name, parameter in inspect.signature(reader).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise IngestError(
            f"format {fmt!r} does not take option(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(accepted) if accepted else 'no options'}"
        )
    return partial(reader, **options)


def source_paths(fmt: str, source: Path, **options: Any) -> list[Path]:
    """Every file a load of ``source`` reads (two for ``typed-csv``), for fingerprinting."""
    if fmt == "typed-csv":
        return list(resolve_paths(source, edges=options.get("edges")))
    return [source]
