"""Small excerpts of real KBs (``tests/fixtures/*.tsv``, head<TAB>relation<TAB>tail) loaded into
an embedded store with embeddings and indexes, as ``kgqa ingest`` would."""

from __future__ import annotations

from pathlib import Path

from kgqa.embed.protocol import Embedder
from kgqa.store.kglite_store import KgliteStore
from kgqa.types import TripleRecord

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def load_excerpt(store: KgliteStore, path: Path, embedder: Embedder) -> KgliteStore:
    """``store`` with the triples of ``path`` loaded and embedded by ``embedder``."""
    from ingest.embedding import embed_store
    from ingest.loader import load

    lines = path.read_text(encoding="utf-8").splitlines()
    records = [TripleRecord(*line.split("\t"), line=i + 1) for i, line in enumerate(lines)]
    load(store, records, source=path.name, fmt="test", source_key=path.stem)
    embed_store(store, embedder)
    return store
