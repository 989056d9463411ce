"""kgqa's indexes found by schema (type, label, properties), not only by name, on both stores.

Why: ``CREATE FULLTEXT INDEX kgqa_entity_name IF NOT EXISTS`` does nothing when an index of the
same schema already exists under another name (a user's own full-text index on the name
property, say): Neo4j and kglite both skip it, so kgqa's name never appears, a check by name
would say "run kgqa prepare" forever and every kernel querying ``'kgqa_entity_name'`` would
fail. ``index_aliases`` maps each kgqa index the kernels query by name to an equivalent index
of the user's where kgqa's own is absent, and the store adapters send that name instead (reuse;
``kgqa unprepare`` drops kgqa's names only, so the user's index stays).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from kgqa.store.mapping import MAPPED_RELATION_TYPE_LABEL, RELATION_TYPE_LABEL, GraphMapping
from kgqa.types import IndexInfo

log = logging.getLogger(__name__)

#: The indexes the kernels query by name (db.index.*.queryNodes): kgqa name -> (type, whose property).
QUERIED_BY_NAME = {
    "entity_name": ("FULLTEXT", "name"),
    "entity_text": ("FULLTEXT", "text"),
    "entity_embedding": ("VECTOR", "embedding"),
    "relation_type_embedding": ("VECTOR", "relation_type"),
}


def schema_of(mapping: GraphMapping, name: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(type, labels, properties) of kgqa's index ``name`` under ``mapping``."""
    kind, prop = QUERIED_BY_NAME[name]
    if prop == "relation_type":
        label = RELATION_TYPE_LABEL if mapping.is_default else MAPPED_RELATION_TYPE_LABEL
        return kind, (label,), ("embedding",)
    return kind, (mapping.entity_label,), (mapping.entity_property(prop),)


def find_equivalent(
    indexes: Iterable[IndexInfo], kind: str, labels: tuple[str, ...], properties: tuple[str, ...]
) -> IndexInfo | None:
    """An index of type ``kind`` on exactly ``labels`` and ``properties``, whatever its name."""
    for index in indexes:
        if index.kind.upper() == kind and index.labels == labels and index.properties == properties:
            return index
    return None


def index_aliases(indexes: Iterable[IndexInfo], mapping: GraphMapping) -> dict[str, str]:
    """kgqa index name -> the name of a user's equivalent index, for each kgqa index queried by
    name that is absent while one of the same schema exists."""
    present = list(indexes)
    names = {ix.name for ix in present}
    aliases = {}
    for kgqa_name in QUERIED_BY_NAME:
        name = mapping.index_name(kgqa_name)
        if name in names:
            continue
        same = find_equivalent(present, *schema_of(mapping, kgqa_name))
        if same is not None:
            log.info("using the existing %s index '%s' in place of kgqa's '%s'", same.kind, same.name, name)
            aliases[name] = same.name
    return aliases


def apply_aliases(text: str, aliases: Mapping[str, str]) -> str:
    """``text`` with each quoted kgqa index name replaced by its alias."""
    for name, alias in aliases.items():
        quoted = alias.replace("\\", "\\\\").replace("'", "\\'")
        text = text.replace(f"'{name}'", f"'{quoted}'")
    return text
