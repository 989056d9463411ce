"""Neo4j driver exceptions as kgqa's, translated once (``map_store_errors``), and the checks that
go with opening a store (the driver import and its codec, the server version).

Split from kgqa.store.neo4j_store, which uses these at every call.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from kgqa.errors import (
    ConfigError,
    MissingIndexError,
    QueryError,
    StoreAuthError,
    StoreError,
    StoreMemoryError,
    StoreUnavailableError,
)
from kgqa.store.mapping import INDEX_PREFIX
from kgqa.store.queries import Query

if TYPE_CHECKING:
    from types import ModuleType

    import neo4j

log = logging.getLogger(__name__)

#: Indexes the ask path queries by name (``cypher/link_vector``, ``cypher/link_fulltext``) and the
#: command that creates each.
SEARCH_INDEXES = {"entity_embedding": "kgqa embed", "entity_name": "kgqa ingest"}

_INDEX_NOT_FOUND = "Neo.ClientError.Schema.IndexNotFound"
_PROCEDURE_FAILED = "Neo.ClientError.Procedure.ProcedureCallFailed"
_DATABASE_NOT_FOUND = "Neo.ClientError.Database.DatabaseNotFound"
_WRITE_IN_READ_MODE = "Neo.ClientError.Statement.AccessMode"
# ProcedureCallFailed covers every failing procedure (a wrong query-vector size too), so only the
# server's "no such ... index" wording makes it a missing index; no narrower code exists for it.
_NO_SUCH_INDEX = re.compile(
    r"no such (?:(vector|fulltext|text|range|point|lookup) )?(?:schema )?index\W*(\w+)?", re.I
)
_POSITION = re.compile(r"line (\d+), column (\d+)")
# Neo.TransientError.General.MemoryPoolOutOfMemoryError, ...TransactionOutOfMemoryError, ...OutOfMemoryError
_OUT_OF_MEMORY = re.compile(r"OutOfMemory|MemoryLimit")
# `WITH $name AS name` binding a parameter that a later `:$(name)` applies as a label or type.

MIN_SERVER_VERSION = (5, 26)
_AGENT_VERSION = re.compile(r"Neo4j/(\d+)\.(\d+)")


def import_neo4j() -> ModuleType:
    """The driver module, or a ConfigError when the installation lacks it."""
    try:
        import neo4j
    except ImportError as exc:
        raise ConfigError(
            "store.backend = 'neo4j' needs the neo4j Python driver, which is not installed",
            hint='reinstall kgqa (it depends on "neo4j>=6"), or use the embedded store: KGQA_STORE=embedded',
        ) from exc
    return neo4j


@functools.cache
def has_rust_codec() -> bool:
    """Whether the driver decodes Bolt with its Rust extension (``neo4j-rust-ext``, the
    ``kgqa[neo4j]`` extra); without it, says once per process how to add it.

    Why it matters: a question reads the embeddings of its subgraph's entities (thousands), and
    the pure-Python codec decodes 3,000 384-dim vectors in ~0.8 s, the Rust one in ~0.09 s
    (bench.bolt_decode, docs/decisions.md).
    """
    if importlib.util.find_spec("neo4j._rust") is not None:
        return True
    log.warning(
        "the neo4j driver decodes in pure Python (about 0.3 s per 1,000 entity embeddings a question "
        'reads); pip install "kgqa[neo4j]" adds its Rust codec (neo4j-rust-ext), about 9x faster'
    )
    return False


def _file_position(query: Query, line: int | None, col: int | None) -> tuple[int | None, int | None]:
    """Map a position in ``query.body`` (what the server saw) to a position in the ``.cypher`` file.

    The body drops the ``//`` header lines and surrounding whitespace, so a server's "line 2" is
    not line 2 of the file a user opens.
    """
    if line is None:
        return None, col
    lines = enumerate(query.text.splitlines(), start=1)
    kept = [(i, ln) for i, ln in lines if not ln.lstrip().startswith("//")]
    while kept and not kept[0][1].strip():
        kept.pop(0)
    if not 1 <= line <= len(kept):
        return line, col
    file_line, text = kept[line - 1]
    if line == 1 and col is not None:
        col += len(text) - len(text.lstrip())
    return file_line, col


def _syntax_position(exc: neo4j.exceptions.Neo4jError) -> tuple[int | None, int | None]:
    """Line/column of a syntax error: the GQL diagnostic record (5.26+), else the message."""
    record = getattr(exc, "diagnostic_record", None)
    position = record.get("_position") if isinstance(record, Mapping) else None
    if isinstance(position, Mapping) and isinstance(position.get("line"), int):
        col = position.get("column")
        return int(position["line"]), int(col) if isinstance(col, int) else None
    match = _POSITION.search(str(exc))
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def _missing_index(exc: neo4j.exceptions.Neo4jError) -> MissingIndexError | None:
    """A MissingIndexError when ``exc`` says an index does not exist, else None."""
    match = _NO_SUCH_INDEX.search(str(exc))
    if exc.code != _INDEX_NOT_FOUND and not (exc.code == _PROCEDURE_FAILED and match):
        return None
    kind = (match.group(1) or "").lower() if match else ""
    name = match.group(2) if match else None
    command = SEARCH_INDEXES.get((name or "").removeprefix(INDEX_PREFIX)) or (
        "kgqa embed" if kind == "vector" else "kgqa ingest"
    )
    label = f"{kind} index '{name}'" if kind and name else f"index '{name}'" if name else "an index"
    return MissingIndexError(
        f"{label} does not exist in Neo4j: {exc}",
        hint=f"run '{command}' against this database (it creates the index), then retry",
    )


def check_server_version(agent: str, uri: str) -> None:
    """Refuse a server older than 5.26 (``agent`` as the driver reports it, ``Neo4j/5.26.1``).

    kgqa's kernels use Cypher of 5.26 and later (scoped ``CALL (x) {...}``, dynamic labels,
    type predicates); an older server would fail at the first such query with a syntax error.
    An agent without a version (a proxy) is let through.

    Raises:
        StoreError: the server is older.
    """
    match = _AGENT_VERSION.search(agent)
    if match is None:
        return
    version = (int(match.group(1)), int(match.group(2)))
    if version < MIN_SERVER_VERSION:
        raise StoreError(
            f"Neo4j at {uri} is {agent}; kgqa needs Neo4j 5.26 or later (or 2025.x / Aura)",
            hint="upgrade the server (docker compose in this repository runs a supported one), or use "
            "the embedded store: KGQA_STORE=embedded",
        )


def _out_of_memory(exc: Exception) -> bool:
    return bool(_OUT_OF_MEMORY.search(str(getattr(exc, "code", None) or "")))


def _memory_error(exc: Exception, where: str) -> StoreMemoryError:
    return StoreMemoryError(
        f"{where}Neo4j ran out of transaction memory ({getattr(exc, 'code', None)}): {exc}",
        hint="write smaller batches (--batch-size / KGQA_INGEST__BATCH_SIZE), or raise the server's "
        "db.memory.transaction.max / dbms.memory.transaction.total.max",
    )


@contextlib.contextmanager
def map_store_errors(query: Query | None = None, *, uri: str | None = None) -> Iterator[None]:
    """Translate neo4j driver exceptions into kgqa's, once, by class and ``.code``.

    Messages use ``str(exc)``: on some 5.x drivers ``ServiceUnavailable.message`` raises or
    hides "connection refused" behind a GQL status, and ``str`` is what every version fills.

    Args:
        query: the kernel being run, named in messages (file path, line/col for syntax errors).
        uri: the server address, named in connection errors.

    Raises:
        StoreAuthError: credentials rejected.
        StoreUnavailableError: server unreachable, session expired, or a transient server error
            (all retryable).
        StoreMemoryError: the transaction ran out of server memory (not retryable as it is).
        StoreError: a write sent to a follower or a read-only database (not retryable: the hint
            names the routing URI).
        QueryError: syntax or other client/database errors for this kernel.
        MissingIndexError: a vector/full-text/range index the kernel needs is absent.
        StoreError: any other driver failure.
    """
    exceptions = import_neo4j().exceptions
    where = f"{query.path}: " if query else ""
    name = query.name if query else None
    server = uri or "the configured URI"
    try:
        yield
    except exceptions.AuthError as exc:
        raise StoreAuthError(
            f"Neo4j at {server} rejected the credentials: {exc}",
            hint="check NEO4J_PASSWORD and the user (KGQA_STORE__NEO4J_USER, default 'neo4j'); with docker "
            "compose the password is the one the neo4j-data volume was first created with",
        ) from exc
    except exceptions.CypherSyntaxError as exc:
        line, col = _syntax_position(exc)
        if query is not None:
            line, col = _file_position(query, line, col)
        at = f"{query.path}:{line}:{col}: " if query and line else where
        raise QueryError(f"{at}Cypher syntax error: {exc}", query=name, line=line, col=col) from exc
    except (exceptions.NotALeader, exceptions.ForbiddenOnReadOnlyDatabase) as exc:
        # transient to the driver's own routing; through a direct bolt:// connection to a follower
        # or a read-only database every retry meets the same server
        raise StoreError(
            f"{where}Neo4j at {server} cannot take this write ({exc.code}): {exc}",
            hint="on a cluster or Aura use a routing URI (neo4j://host:7687 or neo4j+s://...) so writes "
            "go to the leader; a read-only database takes no writes (kgqa ask without --save only reads)",
        ) from exc
    except (exceptions.TransientError, exceptions.ServiceUnavailable, exceptions.SessionExpired) as exc:
        if _out_of_memory(exc):
            raise _memory_error(exc, where) from exc
        if isinstance(exc, exceptions.TransientError):
            message = f"{where}Neo4j reported a transient error ({exc.code}): {exc}"
            hint = "usually passes on retry; if not, check server load and memory (docker compose logs neo4j)"
        else:
            message = f"{where}cannot reach Neo4j at {server} (expected a Bolt server): {exc}"
            hint = (
                "start it with 'docker compose up -d neo4j' (needs NEO4J_PASSWORD), or point "
                "KGQA_STORE__NEO4J_URI at your server's Bolt port (bolt://host:7687, neo4j+s://... "
                "for Aura; 7474 is Neo4j Browser's HTTP port); store.neo4j_connection_timeout_s "
                "bounds each try"
            )
        raise StoreUnavailableError(message, hint=hint) from exc
    except exceptions.ClientError as exc:
        if _out_of_memory(exc):  # TransactionOutOfMemoryError was a client error before 5.x
            raise _memory_error(exc, where) from exc
        missing = _missing_index(exc)
        if missing is not None:
            raise missing from exc
        if exc.code == _DATABASE_NOT_FOUND:
            raise StoreError(
                f"{where}Neo4j at {server} has no such database: {exc}",
                hint="set KGQA_STORE__NEO4J_DATABASE (Community edition has only 'neo4j')",
            ) from exc
        write_hint = (
            "this kernel writes: run it through store.write()" if exc.code == _WRITE_IN_READ_MODE else None
        )
        raise QueryError(
            f"{where}Neo4j rejected the query ({exc.code}): {exc}", query=name, hint=write_hint
        ) from exc
    except exceptions.Neo4jError as exc:
        raise QueryError(f"{where}Neo4j failed ({exc.code}): {exc}", query=name) from exc
    except exceptions.DriverError as exc:
        raise StoreError(f"{where}neo4j driver error at {server}: {exc}") from exc
