"""kgqa: question answering over knowledge graphs stored in a graph database.

The public API (each name is imported on first use, so ``import kgqa`` stays light):

- :func:`open` a graph -> :class:`Graph` with ``.ask(question) -> Answer`` and
  ``.retrieve(question) -> Retrieved`` (scored triples and evidence lines for your own LLM);
- :func:`ingest` a KB file into the store; :func:`train` a retriever on question files or on
  questions made from the graph;
- :class:`Answer`, :class:`Retrieved`, :class:`Settings` and the error root :class:`KgqaError`.

Example:
    >>> import kgqa
    >>> g = kgqa.open(data_dir="kgqa-data")
    >>> print(g.ask("who directed cast away").answers[0].name)
    Robert Zemeckis
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kgqa.answer import Answer, AnswerEntity, EvidenceLine
    from kgqa.api import Graph, Retrieved, ingest, open, train
    from kgqa.config import Settings
    from kgqa.errors import KgqaError

#: Public name -> the module that defines it.
_EXPORTS = {
    "open": "kgqa.api",
    "Graph": "kgqa.api",
    "Retrieved": "kgqa.api",
    "ingest": "kgqa.api",
    "train": "kgqa.api",
    "Answer": "kgqa.answer",
    "AnswerEntity": "kgqa.answer",
    "EvidenceLine": "kgqa.answer",
    "Settings": "kgqa.config",
    "KgqaError": "kgqa.errors",
}

__all__ = [
    "Answer",
    "AnswerEntity",
    "EvidenceLine",
    "Graph",
    "KgqaError",
    "Retrieved",
    "Settings",
    "__version__",
    "ingest",
    "open",
    "train",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kgqa' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup does not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
