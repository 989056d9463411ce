"""Builds the runtime objects a command needs from settings (store, embedder, retriever)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kgqa.config import Settings
from kgqa.embed import make_embedder
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.retriever import Retriever
from kgqa.store import open_store
from kgqa.store.schema import check_embedding_meta
from kgqa.types import EmbeddingMeta


def subgraph_settings(settings: Settings) -> SubgraphSettings:
    r = settings.retrieval
    return SubgraphSettings(hops=r.hops, max_triples=r.max_triples, max_degree=r.max_degree)


@contextmanager
def open_retriever(settings: Settings) -> Iterator[Retriever]:
    """A retriever over the configured store with the configured checkpoint; closes the store."""
    embedder = make_embedder(settings.embedder)
    meta = EmbeddingMeta(embedder.model_id, embedder.dimension)
    with open_store(settings.store) as store:
        check_embedding_meta(store, meta)
        # Neo4j builds indexes in the background: make sure they are ONLINE and sized for the embedder.
        check_indexes = getattr(store, "check_search_indexes", None)
        if check_indexes is not None:
            check_indexes(meta)
        yield Retriever.from_checkpoint(
            store, embedder, settings.checkpoint_path, subgraph=subgraph_settings(settings)
        )
