"""kgqa's indexes on a Neo4j server, awaited one by one after creation (found by schema on both
stores: kgqa.store.index_schema).

Why one by one: ``db.awaitIndexes`` waits on every index of the database, so one of the user's
indexes that takes long to populate, or one that has FAILED, would fail kgqa's run. kgqa waits
only on the index its statement created, by polling ``SHOW INDEXES`` for that name, up to a long
configurable deadline (``store.neo4j_index_wait_s``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from kgqa.errors import StoreError

log = logging.getLogger(__name__)

_CREATED = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:[A-Z]+\s+)?(?:INDEX|CONSTRAINT)\s+(`(?:[^`]|``)+`|\w+)", re.I
)
#: Seconds between two looks at a populating index.
POLL_S = 1.0


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
