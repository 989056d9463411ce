"""Graph stores: the protocol, the embedded kglite adapter and the Neo4j adapter.

``open_store(settings)`` is the factory; adapters are imported only when chosen, so using the
embedded store never imports the neo4j driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgqa.errors import ConfigError

if TYPE_CHECKING:
    from kgqa.config import StoreSettings
    from kgqa.store.protocol import GraphStore


def open_store(settings: StoreSettings) -> GraphStore:
    """Open the store named by ``settings.backend`` ('embedded' or 'neo4j')."""
    if settings.backend == "embedded":
        from kgqa.store.kglite_store import KgliteStore

        return KgliteStore(settings.data_dir / settings.graph_file)
    if settings.backend == "neo4j":
        from kgqa.store.neo4j_store import Neo4jStore

        return Neo4jStore.from_settings(settings)
    raise ConfigError(f"unknown store.backend '{settings.backend}'", hint="use 'embedded' or 'neo4j'")
