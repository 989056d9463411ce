"""Embeds entities and relation types stored in the graph, then builds the vector and full-text indexes.

Works page by page on what still lacks an embedding from the configured model, so it is
resumable and re-running it embeds nothing. The model id, dimension and similarity are recorded
in the store before the first vector is written, so a store can never silently mix two models.

The vector indexes are created after the vectors are written: Neo4j then populates each once
from the finished vectors instead of updating it at every page's commit (kglite serves vector
indexes by exact search, so the order costs it nothing). On Neo4j, entity vectors are stored as
float32 through ``db.create.setNodeVectorProperty`` (``embed_set_entities_vector``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from kgqa.embed.protocol import Embedder
from kgqa.errors import ConfigError, StoreError, StoreMemoryError
from kgqa.store import queries
from kgqa.store.protocol import GraphStore, Statement
from kgqa.store.schema import (
    check_embedding_meta,
    check_mapping,
    count_entities,
    ensure_fulltext_indexes,
    ensure_lookup_indexes,
    ensure_vector_indexes,
    mark_embedding_complete,
    record_embedding_meta,
    run_ddl,
)
from kgqa.types import EmbeddingMeta

log = logging.getLogger(__name__)

SIMILARITY = "cosine"
FETCH_ROWS = 200_000  # pending rows read per scan; bounds memory on very large graphs


@dataclass(slots=True)
class EmbedReport:
    """Outcome of one embedding pass (also its JSON output)."""

    model_id: str
    dimension: int
    entities_embedded: int = 0
    entities_skipped: int = 0
    relation_types_embedded: int = 0
    embed_seconds: float = 0.0
    index_seconds: float = 0.0

    @property
    def entities_per_second(self) -> float:
        return self.entities_embedded / self.embed_seconds if self.embed_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["entities_per_second"] = round(self.entities_per_second, 1)
        return data


def entity_text(name: object, text: object, *, key: str = "") -> str:
    """What an entity is embedded from: its name (``key`` when it has none), plus its description
    where the source has one. A user's graph may hold numbers or lists there; they are embedded
    as their text, never handed to the embedder as they are."""
    head = key if name is None or name == "" else str(name)
    return f"{head}: {text}" if text not in (None, "") else head


def _embed_pages(
    store: GraphStore,
    embedder: Embedder,
    *,
    pending: str,
    setter: str,
    key: str,
    text_of: Callable[[dict[str, Any]], str],
    page_size: int,
    on_page: Callable[[int], None] | None,
) -> int:
    """Embed everything ``pending`` returns, committing one page at a time.

    Pending rows are fetched in large chunks (one scan each) and sorted by text length across the
    chunk, so batches pad little; each page is written in its own transaction, so an interrupted
    run keeps what it finished and the next run fetches only the rest.
    """
    done = 0
    previous: set[Any] = set()
    while rows := store.run(queries.get(pending), {"model_id": embedder.model_id, "limit": FETCH_ROWS}):
        fetched = {r[key] for r in rows}
        if fetched & previous:  # a written row came back: writing cannot finish, stop instead of looping
            again = sorted(map(str, fetched & previous))[:3]
            raise StoreError(
                f"{len(fetched & previous):,} rows of '{pending}' are still pending after their "
                f"embeddings were written (e.g. {', '.join(again)}); stopping instead of looping",
                hint="check that each id is unique and a string, and that nothing else rewrites the "
                "embedding properties meanwhile; then re-run 'kgqa embed'",
            )
        previous = fetched
        rows.sort(key=lambda r: len(text_of(r)))
        for start in range(0, len(rows), page_size):
            page = rows[start : start + page_size]
            vectors = embedder.embed([text_of(r) for r in page]).tolist()
            payload = [{key: r[key], "embedding": v} for r, v in zip(page, vectors, strict=True)]
            _write_vectors(store, setter, embedder.model_id, payload)
            done += len(page)
            if on_page:
                on_page(len(page))
    return done


def _write_vectors(store: GraphStore, setter: str, model_id: str, rows: list[dict[str, Any]]) -> None:
    """Write one page of vectors; a page the server has no transaction memory for is written in
    two halves (each halved again if need be) instead of failing the run.

    Raises:
        StoreMemoryError: a single vector does not fit.
    """
    try:
        store.write([Statement(queries.get(setter), {"model_id": model_id, "rows": rows})])
    except StoreMemoryError:
        if len(rows) == 1:
            raise
        log.warning("page of %d vectors exceeds the server's memory; writing it in two halves", len(rows))
        half = len(rows) // 2
        _write_vectors(store, setter, model_id, rows[:half])
        _write_vectors(store, setter, model_id, rows[half:])


def _describe(value: Any) -> str:
    if isinstance(value, list):
        kinds = {type(v).__name__ for v in value[:8]}
        return f"a list of {len(value)} {'/'.join(sorted(kinds)) or 'items'}"
    return f"a {type(value).__name__} ({str(value)[:40]!r})"


def check_embedding_property(store: GraphStore, dimension: int) -> None:
    """Refuse to embed into a property that holds values kgqa did not write.

    kgqa writes its vector into the mapped embedding property and its model next to it. A value
    there without the model (strings, a user's own vectors of any size) would be overwritten, or,
    when it is already a list, be taken for an embedding and searched; both are refused here.

    Raises:
        ConfigError: the property holds foreign values; the message shows what they are.
    """
    rows = store.run(queries.get("embed_foreign_vectors"), {"limit": 3})
    if not rows:
        return
    mapping = store.mapping
    seen = "; ".join(f"{r['id']!r}: {_describe(r['value'])}" for r in rows)
    sizes = {len(r["value"]) for r in rows if isinstance(r["value"], list)}
    numeric = all(
        isinstance(r["value"], list) and all(isinstance(v, int | float) for v in r["value"]) for r in rows
    )
    what = (
        f"{'/'.join(map(str, sorted(sizes)))}-dimensional vectors kgqa did not write "
        f"(the embedder gives {dimension})"
        if numeric
        else "values that are not vectors"
    )
    raise ConfigError(
        f"store.entity_embedding_property '{mapping.embedding_property}' of :{mapping.entity_label} holds "
        f"{what}, e.g. {seen}",
        hint="kgqa writes its own vectors there and never overwrites yours: unset "
        "KGQA_STORE__ENTITY_EMBEDDING_PROPERTY (kgqa then writes 'kgqa_embedding') or name a property "
        "your nodes do not have",
    )


def embed_store(
    store: GraphStore,
    embedder: Embedder,
    *,
    reembed: bool = False,
    page_size: int = 2048,
    on_page: Callable[[int], None] | None = None,
) -> EmbedReport:
    """Embed whatever lacks an embedding from ``embedder`` and (re)build the search indexes.

    Args:
        reembed: allow switching the store to another model: drops the vector indexes and
            re-embeds everything embedded by the old one. Without it a different model is a
            ``SchemaMismatchError``.
        on_page: called with the number of entities embedded in each page (progress bars).
    """
    meta = EmbeddingMeta(embedder.model_id, embedder.dimension, SIMILARITY)
    report = EmbedReport(model_id=meta.model_id, dimension=meta.dimension)
    if reembed:
        run_ddl(store, "index_drop_vector_entity")
        run_ddl(store, "index_drop_vector_relation_type")
    else:
        check_embedding_meta(store, meta)
    check_mapping(store, command="kgqa prepare --redo")
    check_embedding_property(store, meta.dimension)
    record_embedding_meta(store, meta)
    mark_embedding_complete(store, False)  # until every page is written: ask then counts what is left
    started = time.perf_counter()
    ensure_lookup_indexes(store)  # each page's writes find entities by id
    ensure_fulltext_indexes(store)
    report.index_seconds = time.perf_counter() - started
    started = time.perf_counter()
    report.entities_embedded = _embed_pages(
        store,
        embedder,
        pending="embed_pending_entities",
        setter="embed_set_entities_vector" if store.backend == "neo4j" else "embed_set_entities",
        key="id",
        text_of=lambda r: entity_text(r["name"], r["text"], key=r["id"]),
        page_size=page_size,
        on_page=on_page,
    )
    report.relation_types_embedded = _embed_pages(
        store,
        embedder,
        pending="embed_pending_relation_types",
        setter="embed_set_relation_types",
        key="name",
        text_of=lambda r: str(r["text"] or r["name"]),
        page_size=page_size,
        on_page=None,
    )
    report.embed_seconds = time.perf_counter() - started
    counts = count_entities(store, meta.model_id)
    report.entities_skipped = counts.unkeyed
    if counts.unkeyed:
        mapping = store.mapping
        log.warning(
            "skipped %d :%s nodes without a string '%s' property (kgqa cannot key them)",
            counts.unkeyed,
            mapping.entity_label,
            mapping.id_property,
        )
    if counts.pending == 0:
        mark_embedding_complete(store, True)
    started = time.perf_counter()
    ensure_vector_indexes(store, meta)
    report.index_seconds += time.perf_counter() - started
    return report
