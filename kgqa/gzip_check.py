"""Checking a ``.gz`` file whole before reading it: shared by the question readers (``kgqa``) and
the source readers (``ingest``).

Why: gzip verifies its CRC only at the end of the stream, so a corrupt file first decompresses
to garbage lines, which a reader would parse (or a load commit) before the error shows, and a
truncated one ends in a bare ``EOFError``. Decompressing once up front turns both into one
:class:`~kgqa.errors.IngestError` naming the file, before anything is read from it.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from kgqa.errors import IngestError

#: What a truncated or corrupt file raises while it is being read (gzip raises all three).
READ_ERRORS = (OSError, EOFError, zlib.error)


def is_gzip(path: Path) -> bool:
    """True when the file is read through gzip; decided by the ``.gz`` suffix, never by sniffing."""
    return path.suffix.lower() == ".gz"


def check_gzip(path: Path, *, what: str) -> None:
    """Decompress ``path`` once, to the end, and discard the bytes.

    Args:
        path: a ``.gz`` file.
        what: how messages name the file ("source file", "question file").

    Raises:
        IngestError: the file is truncated, corrupt or no gzip file at all.
    """
    try:
        with gzip.open(path, "rb") as packed:
            while packed.read(1 << 24):
                pass
    except READ_ERRORS as exc:
        raise IngestError(
            f"{what} is truncated or corrupt: {exc}",
            path=str(path),
            hint="re-download or re-compress the file; nothing was read from it",
        ) from exc
