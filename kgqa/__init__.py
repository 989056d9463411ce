"""kgqa: question answering over knowledge graphs stored in a graph database."""

from __future__ import annotations

__version__ = "0.1.0"
