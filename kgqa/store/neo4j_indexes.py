"""kgqa's indexes on a Neo4j server: found by schema (type, label, properties), not only by name,
and awaited one by one after creation.

Why by schema: ``CREATE FULLTEXT INDEX kgqa_entity_name IF NOT EXISTS`` does nothing when an index
of the same schema already exists under another name (a user's own full-text index on the name
property, say), so kgqa's name never appears and a check by name would say "run kgqa prepare"
forever. ``index_aliases`` maps each kgqa index the kernels query by name to an equivalent index
of the user's where kgqa's own is absent, and the adapter then sends that name instead (reuse).

Why one by one: ``db.awaitIndexes`` waits on every index of the database, so one of the user's
indexes that takes long to populate, or one that has FAILED, would fail kgqa's run. kgqa waits
only on the index its statement created, by polling ``SHOW INDEXES`` for that name, up to a long
configurable deadline (``store.neo4j_index_wait_s``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kgqa.errors import StoreError
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
_CREATED = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:[A-Z]+\s+)?(?:INDEX|CONSTRAINT)\s+(`(?:[^`]|``)+`|\w+)", re.I
)
#: Seconds between two looks at a populating index.
POLL_S = 1.0


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


def created_name(body: str) -> str | None:
    """The index or constraint name a ``CREATE ... INDEX|CONSTRAINT name`` statement creates."""
    match = _CREATED.match(body)
    if match is None:
        return None
    name = match.group(1)
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def await_index(
    show: Callable[[str], list[dict[str, Any]]],
    name: str,
    *,
    deadline_s: float,
    poll_s: float = POLL_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Wait until the index ``name`` is ONLINE; other indexes are never waited on.

    Args:
        show: returns the ``SHOW INDEXES`` rows (``state``, ``failureMessage``) named ``name``.
        deadline_s: give up waiting after this many seconds (the index populates on; ``ask``
            refuses it until ONLINE).

    Returns:
        ``"ONLINE"``, ``"ABSENT"`` (the statement created nothing: an index of the same schema
        existed) or ``"POPULATING"`` (the deadline passed).

    Raises:
        StoreError: the index FAILED; the message is the server's failure message.
    """
    end = clock() + deadline_s
    while True:
        rows = show(name)
        if not rows:
            return "ABSENT"
        state = str(rows[0].get("state", "")).upper()
        if state == "ONLINE":
            return state
        if state == "FAILED":
            raise StoreError(
                f"kgqa's index '{name}' FAILED to populate: {rows[0].get('failureMessage')}",
                hint=f"fix the cause, then DROP INDEX {name} and re-run the command (it recreates it)",
            )
        if clock() >= end:
            log.warning(
                "index '%s' is still %s after %.0f s; it populates on, and 'kgqa ask' waits for it "
                "(store.neo4j_index_wait_s sets how long this command waits)",
                name,
                state,
                deadline_s,
            )
            return "POPULATING"
        sleep(min(poll_s, max(0.0, end - clock())))
