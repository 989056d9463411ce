"""Graph stores: the protocol, the embedded kglite adapter and the Neo4j adapter.

``open_store(settings)`` is the factory; adapters are imported only when chosen, so using the
embedded store never imports the neo4j driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgqa.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from kgqa.config import StoreSettings
    from kgqa.store.mapping import GraphMapping
    from kgqa.store.protocol import GraphStore


def graph_mapping(settings: StoreSettings) -> GraphMapping:
    """The schema mapping the ``store.entity_*`` / ``store.fact_types`` settings name.

    Raises:
        ConfigError: a name Neo4j cannot use, or one of kgqa's own labels.
    """
    from kgqa.store.mapping import GraphMapping

    return GraphMapping.of(
        entity_label=settings.entity_label,
        id_property=settings.entity_id_property,
        name_property=settings.entity_name_property,
        text_property=settings.entity_text_property,
        embedding_property=settings.entity_embedding_property,
        fact_types=settings.fact_types,
        type_property=settings.entity_type_property,
    )


def open_store(settings: StoreSettings, *, create: bool = False) -> GraphStore:
    """Open the store named by ``settings.backend`` ('embedded' or 'neo4j').

    Args:
        create: create an embedded store that does not exist yet (``kgqa ingest``); otherwise a
            missing one is an error, so a mistyped data dir is not silently a new, empty store.

    Raises:
        StoreError: ``create`` is false and the embedded store does not exist.
    """
    if settings.backend == "embedded":
        from kgqa.store.kglite_store import KgliteStore

        path = settings.data_dir / settings.graph_file
        if not create and not path.exists():
            raise StoreError(
                f"no graph store at {path}",
                hint="check --data-dir / KGQA_DATA_DIR (store.data_dir), or load one with 'kgqa ingest'",
            )
        return KgliteStore(path, mapping=graph_mapping(settings))
    if settings.backend == "neo4j":
        from kgqa.store.neo4j_store import Neo4jStore

        return Neo4jStore.from_settings(settings)
    raise ConfigError(f"unknown store.backend '{settings.backend}'", hint="use 'embedded' or 'neo4j'")
