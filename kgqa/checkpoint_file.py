"""Checkpoint files on disk: saved atomically, loaded only as plain data, refused with the file's
name when they are not a readable checkpoint.

Why one module: ``kgqa train`` and MoR training write checkpoints, and ``eval``, ``retrieve``,
``link``, ``ask`` and ``train --reuse-scorers`` read them. A save that fails half way must not
destroy the previous file (:mod:`kgqa.atomic_write`), and a truncated, corrupt or foreign file
must end in a :class:`~kgqa.errors.CheckpointError` that names it, not in torch's traceback (whose
advice to load with ``weights_only=False`` would run whatever the file holds).
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from kgqa.atomic_write import atomic_write
from kgqa.errors import CheckpointError

#: What ``torch.load`` raises on a file that is not a (safe) torch file: a cut-off or corrupt
#: zip (RuntimeError, EOFError), an old or foreign pickle (UnpicklingError, ValueError, ...).
_LOAD_ERRORS = (
    OSError,
    EOFError,
    RuntimeError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    UnicodeDecodeError,
    pickle.UnpicklingError,
)
_REASON_CHARS = 120


def save_checkpoint(data: Mapping[str, Any], path: Path) -> None:
    """Write ``data`` (plain values and tensors) to ``path`` with ``torch.save``, atomically.

    Raises:
        CheckpointError: the file could not be written (full disk, no permission); a previous
            checkpoint at ``path`` is kept as it was.
    """
    try:
        with atomic_write(Path(path)) as handle:
            torch.save(dict(data), handle)
    except (OSError, RuntimeError) as exc:  # torch's zip writer reports a failed write as RuntimeError
        raise CheckpointError(
            f"cannot write checkpoint {path}: {_reason(exc)}",
            hint="free disk space (or raise the file-size limit) and train again; "
            "the previous checkpoint there, if any, is unchanged",
        ) from exc


def load_checkpoint(path: Path) -> dict[str, Any]:
    """The dict a checkpoint file holds, loaded on CPU with ``weights_only=True``.

    Raises:
        CheckpointError: the file is missing, truncated, corrupt, not a torch file, or holds
            something other than a dict (the message names the file).
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(
            f"checkpoint {path} does not exist", hint="train one with 'kgqa train' or fix the path"
        )
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except _LOAD_ERRORS as exc:
        raise CheckpointError(
            f"checkpoint {path} is truncated, corrupt or not a kgqa checkpoint ({_reason(exc)})",
            hint="train it again with 'kgqa train', or point --checkpoint at a file it wrote",
        ) from exc
    if not isinstance(data, dict):
        raise CheckpointError(
            f"checkpoint {path} holds a {type(data).__name__}, not a kgqa checkpoint",
            hint="point --checkpoint at a file 'kgqa train' wrote",
        )
    return data


def _reason(exc: BaseException) -> str:
    """The first line of an error, short, without torch's advice to unpickle unsafely."""
    if "weights_only" in str(exc):
        return "it holds objects other than plain values and tensors"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return first if len(first) <= _REASON_CHARS else first[:_REASON_CHARS] + "..."
