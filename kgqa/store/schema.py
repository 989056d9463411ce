"""Schema set-up and the embedding-model pre-flight check, shared by both backends.

The store records which embedding model built it (a ``:KgqaMeta`` node); opening it with a
different model is a ``SchemaMismatchError`` rather than silently comparing vectors from two
different spaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgqa.errors import ConfigError, SchemaMismatchError
from kgqa.store import queries
from kgqa.store.mapping import GraphMapping
from kgqa.types import SCHEMA_VERSION, EmbeddingMeta, IndexInfo, StoreInfo

if TYPE_CHECKING:
    from kgqa.store.protocol import GraphStore

CONSTRAINT_KERNELS = ("schema_constraint_relation_type_name", "schema_constraint_kgqa_question_id")
VECTOR_INDEX_KERNELS = ("index_create_vector_entity", "index_create_vector_relation_type")
FULLTEXT_INDEX_KERNELS = ("index_create_fulltext_entity",)
#: Index types that answer an equality lookup (kglite calls its range index PROPERTY).
SEEK_INDEX_TYPES = frozenset({"RANGE", "PROPERTY"})
#: Built only where some entity has a text (text-rich graphs; MoR matches descriptions with it).
TEXT_INDEX_KERNEL = "index_create_fulltext_entity_text"


def run_ddl(store: GraphStore, name: str, params: dict[str, object] | None = None) -> None:
    """Run one schema statement on its own (DDL cannot share a transaction)."""
    from kgqa.store.protocol import Statement

    store.write([Statement(queries.get(name), params or {})])


def ensure_constraints(store: GraphStore) -> None:
    """Create the uniqueness constraints and the entity lookup indexes; a no-op when they exist."""
    for name in CONSTRAINT_KERNELS:
        run_ddl(store, name)
    ensure_lookup_indexes(store)


def ensure_lookup_indexes(store: GraphStore) -> list[str]:
    """Make sure the entity id and normalised-name lookups are index seeks; create what is missing.

    Every kernel finds entities by ``{id: ...}`` or ``name_norm IN ...``; without an index each
    row is a label scan. A store kgqa ingested has both, but a database it did not ingest may
    lack them, so ``kgqa embed``, ``prepare`` and ``ask`` call this. Nothing is written when both
    exist, so a read-only command stays read-only. kgqa's own graph gets the uniqueness
    constraint on ``Entity.id``; a mapped graph (kgqa.store.mapping) an index only, never a
    constraint on the user's data.

    Returns:
        the kernels run (empty when both indexes existed).
    """
    mapping = store.mapping
    present = {
        (tuple(row.get("labelsOrTypes") or ()), tuple(row.get("properties") or ()))
        for row in store.run(queries.get("index_list"))
        if str(row.get("type")).upper() in SEEK_INDEX_TYPES
    }
    label = (mapping.entity_label,)
    wanted = {
        mapping.id_property: "schema_constraint_entity_id"
        if mapping.is_default
        else "index_create_entity_id",
        mapping.name_norm_property: "index_create_entity_name_norm",
    }
    created = [kernel for prop, kernel in wanted.items() if (label, (prop,)) not in present]
    for kernel in created:
        run_ddl(store, kernel)
    return created


def ensure_vector_indexes(store: GraphStore, meta: EmbeddingMeta) -> None:
    """Create the vector indexes, sized for ``meta`` (after the vectors are written: Neo4j then
    populates each once instead of at every page's commit)."""
    for name in VECTOR_INDEX_KERNELS:
        run_ddl(store, name, {"dimensions": meta.dimension, "similarity": meta.similarity})


def ensure_fulltext_indexes(store: GraphStore) -> None:
    """Create the full-text index over names and, where entities have texts, the one over texts.

    The text index serves MoR's text matching only, which needs typed entities: a graph kgqa did
    not ingest gets it where its entities have texts and types (``store.entity_type_property``),
    not over descriptions MoR could never use."""
    for name in FULLTEXT_INDEX_KERNELS:
        run_ddl(store, name)
    if wants_text_index(store):
        run_ddl(store, TEXT_INDEX_KERNEL)


def wants_text_index(store: GraphStore) -> bool:
    """Whether the graph gets the full-text index over entity texts (one look at the label)."""
    [row] = store.run(queries.get("entities_text_present"))
    return bool(row["present"]) and (store.mapping.is_default or bool(row["typed"]))


def read_embedding_meta(store: GraphStore) -> EmbeddingMeta | None:
    """The embedding model recorded in the store, or None for a store never embedded."""
    rows = store.run(queries.get("meta_get"))
    if not rows or rows[0]["model_id"] is None:
        return None
    row = rows[0]
    return EmbeddingMeta(str(row["model_id"]), int(row["dimension"]), str(row["similarity"]))


def check_embedding_meta(store: GraphStore, meta: EmbeddingMeta) -> EmbeddingMeta | None:
    """Raise SchemaMismatchError if the store was embedded with another model or size.

    Returns:
        The recorded model (None for a store never embedded).
    """
    recorded = read_embedding_meta(store)
    if recorded is None or recorded == meta:
        return recorded
    raise SchemaMismatchError(
        f"the store was embedded with '{recorded.model_id}' ({recorded.dimension} dims, "
        f"{recorded.similarity}) but the configured embedder is '{meta.model_id}' "
        f"({meta.dimension} dims, {meta.similarity})",
        hint=f"set embedder.model = '{recorded.model_id}' (KGQA_EMBEDDER__MODEL), or re-embed the "
        f"store with 'kgqa embed --reembed' (drops and rebuilds the vector indexes)",
    )


def count_pending_entities(store: GraphStore, model_id: str) -> int:
    """Entities with a string id but no embedding from ``model_id`` (a scan of the entity label)."""
    return count_entities(store, model_id).pending


@dataclass(frozen=True, slots=True)
class EntityCounts:
    """What an embedding pass leaves: ``pending`` keyed entities without a vector from the model,
    of ``keyed`` ones (a string id), and ``unkeyed`` ones (no id, or one that is not a string)
    that kgqa skips."""

    pending: int
    keyed: int
    unkeyed: int


def count_entities(store: GraphStore, model_id: str) -> EntityCounts:
    """Pending and unkeyed entities for ``model_id`` (one scan of the entity label)."""
    rows = store.run(queries.get("embed_count_pending_entities"), {"model_id": model_id})
    if not rows:
        return EntityCounts(0, 0, 0)
    row = rows[0]
    return EntityCounts(int(row["pending"]), int(row["keyed"] or 0), int(row["unkeyed"] or 0))


def embedding_complete(store: GraphStore) -> bool | None:
    """The completion flag an embedding run leaves (None: a store from before the flag, or none)."""
    rows = store.run(queries.get("meta_get"))
    flag = rows[0].get("embedding_complete") if rows else None
    return None if flag is None else bool(flag)


def mark_embedding_complete(store: GraphStore, complete: bool) -> None:
    """Record whether every keyed entity has a vector from the recorded model (no-op unembedded)."""
    from kgqa.store.protocol import Statement

    store.write([Statement(queries.get("meta_set_embedding_complete"), {"complete": complete})])


def stored_mapping(store: GraphStore) -> GraphMapping | None:
    """The schema mapping ``kgqa prepare`` last prepared the graph for (None: never prepared)."""
    rows = store.run(queries.get("meta_get"))
    text = rows[0].get("mapping") if rows else None
    return GraphMapping.from_json(str(text)) if text else None


def record_mapping(store: GraphStore) -> None:
    """Record the store's mapping as the one the graph is prepared for."""
    from kgqa.store.protocol import Statement

    store.write([Statement(queries.get("meta_set_mapping"), {"mapping": store.mapping.to_json()})])


def check_mapping(store: GraphStore, *, command: str = "kgqa prepare --redo") -> None:
    """Refuse to work through a mapping other than the one the graph was prepared for.

    Names, vectors and slices were written for the recorded mapping (its name property, its fact
    types); read through another they link and expand wrongly, and a prepare over them would
    leave the old ones in place.

    Raises:
        ConfigError: the configured mapping differs; the message lists what changed and the hint
            gives ``command``, which redoes the preparation.
    """
    recorded = stored_mapping(store)
    if recorded is None or recorded == store.mapping:
        return
    changes = "; ".join(recorded.differences(store.mapping))
    raise ConfigError(
        f"this graph was prepared for another schema mapping ({changes})",
        hint=f"run '{command}' with the new mapping (it removes what kgqa wrote for the old one, as "
        "'kgqa unprepare' does, then prepares again), or set the old values back",
    )


def check_query_embedder(store: GraphStore, meta: EmbeddingMeta) -> None:
    """For a command that embeds a query: the store is embedded with ``meta``'s model, completely.

    Vectors of two models are not comparable, so a store whose (re-)embedding stopped part way
    (a killed ``kgqa embed --reembed``) is refused rather than searched half in each space.
    The check reads the completion flag the embedding run leaves in the meta node, so it costs
    one lookup, not a scan of the entity label; only a store without the flag (embedded before
    it existed) or one whose run did not finish is counted.

    Raises:
        SchemaMismatchError: another model, or entities still waiting for this one (the hint
            says how to finish or roll back).
        ConfigError: the graph was prepared for another schema mapping (check_mapping).
    """
    check_mapping(store)
    recorded = check_embedding_meta(store, meta)
    if recorded is None or embedding_complete(store):
        return
    pending = count_pending_entities(store, meta.model_id)
    if pending:
        raise SchemaMismatchError(
            f"embedding the store with '{meta.model_id}' did not finish: {pending:,} entities have "
            "no embedding from it yet",
            hint=f"run 'kgqa embed --model {meta.model_id}' to finish (it resumes), or "
            "'kgqa embed --reembed --model OTHER' to switch the whole store to another model",
        )


def record_embedding_meta(store: GraphStore, meta: EmbeddingMeta) -> None:
    """Write the model id, dimension, similarity and schema version into the store."""
    from kgqa.store.protocol import Statement

    params = {
        "model_id": meta.model_id,
        "dimension": meta.dimension,
        "similarity": meta.similarity,
        "schema_version": SCHEMA_VERSION,
    }
    store.write([Statement(queries.get("meta_set"), params)])


def _index_info(row: dict[str, object]) -> IndexInfo:
    options = row.get("options") or {}
    config = options.get("indexConfig", {}) if isinstance(options, dict) else {}
    dims = config.get("vector.dimensions")
    sim = config.get("vector.similarity_function")
    return IndexInfo(
        name=str(row["name"]),
        kind=str(row["type"]),
        state=str(row["state"]),
        labels=tuple(row.get("labelsOrTypes") or ()),  # type: ignore[arg-type]
        properties=tuple(row.get("properties") or ()),  # type: ignore[arg-type]
        dimensions=int(dims) if dims is not None else None,
        similarity=str(sim).lower() if sim is not None else None,
    )


def list_indexes(store: GraphStore) -> tuple[IndexInfo, ...]:
    """Every index of the store (``SHOW INDEXES``), kgqa's and the user's."""
    return tuple(_index_info(row) for row in store.run(queries.get("index_list")))


def read_store_info(store: GraphStore, *, backend: str, location: str) -> StoreInfo:
    """Indexes and embedding model of any store, through the shared kernels."""
    indexes = list_indexes(store)
    meta_rows = store.run(queries.get("meta_get"))
    version = meta_rows[0]["schema_version"] if meta_rows else None
    return StoreInfo(
        backend=backend,
        location=location,
        indexes=indexes,
        embedding=read_embedding_meta(store),
        schema_version=int(version) if version is not None else None,
    )
