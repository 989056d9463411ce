"""Replacing a file all at once: readers see the old content or the new, never half of either.

Why: a file written in place is destroyed by a failure half way (a full disk, a kill, a crash),
and the previous good version with it. Writing to a temporary file in the same folder, syncing
it to disk and renaming it over the target keeps the old file until the new one is complete
(``os.replace`` is atomic within one file system).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_write(path: Path) -> Iterator[BinaryIO]:
    """A binary handle on a temporary file beside ``path`` that replaces ``path`` when the
    block ends.

    The parent folder is created. If the block raises (or the process dies), ``path`` keeps
    its old content (or stays absent) and the temporary file is removed (a killed process
    leaves a ``.<name>.*.tmp`` file beside it, never a damaged ``path``).

    Args:
        path: the file to (re)place.

    Raises:
        OSError: what writing, syncing or renaming raised (a full disk: ``ENOSPC``/``EFBIG``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    partial = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the platform lets a folder be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
