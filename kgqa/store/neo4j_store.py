"""The production store: Neo4j 5.26+ / 2025.x / Aura over Bolt, through the official ``neo4j``
driver (6.x, a core dependency).

It runs the same Neo4j-dialect kernels as the embedded store, rendered through the store's
schema mapping (kgqa.store.mapping), so there is little to normalise: vector scores are already
on Neo4j's ``(1 + cos) / 2`` scale and element ids are already ``str``. What this adapter adds
is what a server brings with it:

- the driver is imported only when this adapter is used, so the embedded default never loads it;
  without its Rust codec (the ``kgqa[neo4j]`` extra) a warning says how to add it.
- a kernel that applies a dynamic label or type bound from a parameter (``WITH $rel_type AS
  rel_type ... [:$(rel_type)]``) is sent with that name as a quoted literal: the loader writes
  one type per statement, and a literal type lets its existence probe check that type's
  relationships only, and a count by literal type read the count store (a dynamic one cannot
  do either).
- every session shares one bookmark manager, so on a cluster or Aura a read sees the write
  before it; read transactions end server-side after ``store.neo4j_read_timeout_s``.
- a created index or constraint is awaited by its own name (kgqa.store.neo4j_indexes), up to
  ``store.neo4j_index_wait_s``, so the first query after ``kgqa ingest``/``embed``/``prepare``
  never meets a POPULATING index and no index of the user's (slow, or FAILED) is waited on;
  kgqa's indexes are found by schema, and an equivalent index of the user's is reused
  (kgqa.store.index_schema, as on the embedded store).
- maintenance reads (pending pages and counts, hub slices, stats, prepare estimates: label
  scans) end after ``store.neo4j_maintenance_timeout_s``, not the ask path's read timeout.
- a commit whose outcome is unknown (``IncompleteCommit``: the connection dropped while
  committing) is re-checked, not re-run blindly: a write carrying an ingest resume point is
  committed when the resume point is there; one that is not idempotent is otherwise refused.
- servers older than 5.26 are refused at open, with the version they report.
- a transaction that runs out of server memory is a ``StoreMemoryError``, not retried as it is
  (the same call fails again); callers that can, split it (ingest.loader halves its batch).
- a pre-flight ``verify_connectivity()`` on open, so a wrong URI or password fails at once with a
  fix instead of at the first query.
- transient failures (server restarting, leader switch, deadlock) are retried with tenacity.
  The driver's own managed-transaction retry is turned off (``max_transaction_retry_time=0``) so
  there is one retry policy with one budget (``store.retry_attempts`` tries, no new try once
  ``store.neo4j_retry_deadline_s`` would pass), not two stacked ones.
- every connection attempt, Bolt handshake included, ends within
  ``store.neo4j_connection_timeout_s`` (the driver's ``connection_acquisition_timeout``, whose
  60 s default otherwise bounds a handshake with a server that never answers).
- schema DDL cannot share a transaction with data writes in Neo4j, so a lone DDL statement runs
  as an auto-commit query.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import tenacity

from kgqa.errors import (
    ConfigError,
    MissingIndexError,
    QueryError,
    RetryableError,
    SchemaMismatchError,
    StoreError,
    StoreUnavailableError,
)
from kgqa.store import queries
from kgqa.store.index_schema import apply_aliases, index_aliases, schema_of
from kgqa.store.mapping import GraphMapping, quote
from kgqa.store.neo4j_errors import (
    SEARCH_INDEXES,
    check_server_version,
    has_rust_codec,
    import_neo4j,
    map_store_errors,
)
from kgqa.store.neo4j_indexes import await_index, created_name
from kgqa.store.protocol import Statement
from kgqa.store.queries import Query
from kgqa.store.schema import read_store_info
from kgqa.types import EmbeddingMeta, StoreInfo, WriteSummary

if TYPE_CHECKING:
    import neo4j

    from kgqa.config import StoreSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
DEFAULT_RETRY_WAIT = tenacity.wait_exponential(multiplier=0.5, max=8.0)
"""Between attempts: 0.5 s, 1 s, 2 s, 4 s, then 8 s at most."""

# comments and string literals, left out when looking for a variable's uses
_CODE_ONLY = re.compile(r"//[^\n]*|'(?:[^'\\]|\\.)*'")
_DYNAMIC_BINDING = re.compile(r"\bWITH\s+\$(\w+)\s+AS\s+(\w+)\s*$", re.M)
#: Kernels that scan a label (maintenance, not the ask path): run under the maintenance deadline.
MAINTENANCE_KERNELS = frozenset(
    {
        "embed_pending_entities",
        "embed_count_pending_entities",
        "embed_pending_relation_types",
        "embed_foreign_vectors",
        "entities_text_present",
        "prepare_pending_names",
        "prepare_estimate",
        "prepare_unkeyed_sample",
        "ingest_slices_pending",
        "ingest_heavy_heads",
        "stats_labels",
        "stats_relationship_types",
        "stats_relationship_type_count",
    }
)
#: Write kernels a blind re-run would apply twice (they CREATE what a probe found absent).
NOT_IDEMPOTENT = frozenset({"ingest_triples_absent"})
_SHOW_INDEX = "SHOW INDEXES YIELD name, state, failureMessage WHERE name = $name RETURN state, failureMessage"
_SCHEMA_STATEMENT = re.compile(
    r"^\s*(?:CREATE|DROP)\s+(?:OR\s+REPLACE\s+)?(?:[A-Z]+\s+)?(?:INDEX|CONSTRAINT)\b", re.I
)


def literal_dynamic_names(query: Query, params: Mapping[str, Any]) -> Query:
    """``query`` with each ``:$(name)`` bound by ``WITH $name AS name`` written as the quoted
    literal ``params[name]``; unchanged when it has none or the value is not a string.

    The kernel text stays valid on both backends (kglite runs the dynamic form); on Neo4j a
    literal type lets ``EXISTS { (h)-[:T]->(t) }`` expand only ``T`` relationships and a count by
    type read the count store, which the dynamic form cannot.
    """
    text = query.text
    for param, var in _DYNAMIC_BINDING.findall(query.body):
        value = params.get(param)
        if isinstance(value, str) and value:
            text = text.replace(f":$({var})", f":{quote(value)}")
            binding = re.compile(rf"^\s*WITH\s+\${param}\s+AS\s+{var}\s*\n", re.M)
            rest = binding.sub("", text, count=1)
            if not re.search(rf"\b{var}\b", _CODE_ONLY.sub("", rest)):
                # the binding is now unused: dropped, so a count by type is planned alone and
                # read from the count store (a leading WITH keeps the planner from it)
                text = rest
    return query if text == query.text else replace(query, text=text)


def is_schema_statement(query: Query) -> bool:
    """True for index/constraint DDL, which Neo4j runs only outside data-write transactions."""
    return _SCHEMA_STATEMENT.match(query.body) is not None


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """A driver value as plain Python: nodes, relationships and paths become dicts.

    Kernels return scalars and lists (STYLE 2.7), so this is normally a pass-through; it exists so
    a ``neo4j.graph`` object can never leave the adapter. ``record.data()`` is not used because it
    drops element ids and labels.
    """
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    from neo4j.graph import Node, Path, Relationship  # loaded already: this adapter imported neo4j

    if isinstance(value, Node):
        return {
            "element_id": value.element_id,
            "labels": sorted(value.labels),
            "properties": _plain(dict(value)),
        }
    if isinstance(value, Relationship):
        start, end = value.start_node, value.end_node
        return {
            "element_id": value.element_id,
            "type": value.type,
            "start_element_id": start.element_id if start is not None else None,
            "end_element_id": end.element_id if end is not None else None,
            "properties": _plain(dict(value)),
        }
    if isinstance(value, Path):
        return {
            "nodes": [_plain(n) for n in value.nodes],
            "relationships": [_plain(r) for r in value.relationships],
        }
    to_native = getattr(value, "to_native", None)  # neo4j.time Date/Time/DateTime, neo4j.vector.Vector
    return to_native() if callable(to_native) else value


def _summary(counters: neo4j.SummaryCounters) -> WriteSummary:
    return WriteSummary(
        **{f.name: getattr(counters, f.name) for f in fields(WriteSummary) if f.name != "properties_removed"}
    )


class Neo4jStore:
    """A ``GraphStore`` over one Neo4j database, reached through a driver it owns.

    Use ``Neo4jStore.from_settings(settings)`` (what ``open_store`` does); the constructor takes a
    ready driver so tests and callers with special driver options can inject one.

    Args:
        driver: a ``neo4j.Driver``; closed by ``close()``.
        uri: where the driver points, for messages and ``info()``.
        database: the database every session uses.
        retry_attempts: attempts per call for retryable failures (at least 1).
        retry_wait: tenacity wait strategy between attempts; tests pass ``wait_none()``.
        retry_deadline_s: no new attempt starts when it could not finish within this many
            seconds of the first one (an attempt may take up to ``attempt_timeout_s``).
        attempt_timeout_s: the longest one connection attempt may take, in seconds.
        read_timeout_s: the server ends a read transaction running longer than this.
        maintenance_timeout_s: the same for maintenance reads (``MAINTENANCE_KERNELS``).
        index_wait_s: how long a created index is waited on before the command goes on.
        mapping: the graph's labels and properties (kgqa.store.mapping); every kernel is
            rendered through it.

    Raises:
        StoreUnavailableError: the server cannot be reached (after retries).
        StoreAuthError: the server rejected the credentials.
    """

    backend = "neo4j"

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        uri: str,
        database: str,
        retry_attempts: int = 5,
        retry_wait: tenacity.wait.wait_base | None = None,
        retry_deadline_s: float = 30.0,
        attempt_timeout_s: float = 10.0,
        read_timeout_s: float = 120.0,
        maintenance_timeout_s: float = 3600.0,
        index_wait_s: float = 3600.0,
        mapping: GraphMapping | None = None,
    ) -> None:
        self.uri = uri
        self.database = database
        self.mapping = mapping or GraphMapping()
        self._driver: neo4j.Driver | None = driver
        self._read_timeout_s = read_timeout_s
        self._maintenance_timeout_s = maintenance_timeout_s
        self._index_wait_s = index_wait_s
        self._index_aliases: dict[str, str] = {}  # kgqa index name -> an equivalent user index
        # one causal chain for every session of this store: a read after a write sees it
        self._bookmarks = import_neo4j().GraphDatabase.bookmark_manager()
        self._retry_attempts = max(1, retry_attempts)
        self._retry_wait = retry_wait if retry_wait is not None else DEFAULT_RETRY_WAIT
        self._retry_deadline_s = retry_deadline_s
        self._last_start_s = max(0.0, retry_deadline_s - attempt_timeout_s)
        try:
            self._retrying(self._verify, what="connect")
        except BaseException:
            with contextlib.suppress(StoreError):
                self.close()
            raise

    @classmethod
    def from_settings(
        cls, settings: StoreSettings, *, retry_wait: tenacity.wait.wait_base | None = None
    ) -> Neo4jStore:
        """Build the driver from ``store.*`` settings and open the store (with a connectivity check).

        Raises:
            ConfigError: the driver is not installed, NEO4J_PASSWORD is unset, or the URI is not Bolt.
            StoreUnavailableError, StoreAuthError: see the class docstring.
        """
        from kgqa.store import graph_mapping

        driver_module = import_neo4j()
        has_rust_codec()
        if settings.neo4j_password is None:
            raise ConfigError(
                f"store.backend = 'neo4j' but no password is set for {settings.neo4j_uri}",
                hint="export NEO4J_PASSWORD=... (the environment or .env only; never in kgqa.toml)",
            )
        uri = settings.neo4j_uri
        parts = urlsplit(uri)
        try:
            parts.port  # noqa: B018 - the driver would raise a bare ValueError for a non-numeric port later
        except ValueError as exc:
            raise ConfigError(
                f"store.neo4j_uri {uri!r} has a port that is not a number",
                hint="set KGQA_STORE__NEO4J_URI=bolt://host:7687",
            ) from exc
        scheme = parts.scheme
        if scheme not in BOLT_SCHEMES:
            raise ConfigError(
                f"store.neo4j_uri {uri!r} is not a Bolt URI (scheme {scheme or 'missing'!r})",
                hint="set KGQA_STORE__NEO4J_URI=bolt://localhost:7687 (neo4j+s://... for Aura); port 7474 "
                "is Neo4j Browser, not the driver",
            )
        try:
            driver = driver_module.GraphDatabase.driver(
                uri,
                auth=(settings.neo4j_user, settings.neo4j_password.get_secret_value()),
                max_connection_pool_size=settings.neo4j_max_pool_size,
                connection_timeout=settings.neo4j_connection_timeout_s,
                connection_acquisition_timeout=settings.neo4j_connection_timeout_s,
                max_transaction_retry_time=0.0,  # tenacity in this module is the one retry policy
            )
        except (ValueError, driver_module.exceptions.ConfigurationError) as exc:
            raise ConfigError(
                f"cannot use store.neo4j_uri {uri!r}: {exc}",
                hint="set KGQA_STORE__NEO4J_URI=bolt://host:7687",
            ) from exc
        return cls(
            driver,
            uri=uri,
            database=settings.neo4j_database,
            retry_attempts=settings.retry_attempts,
            retry_wait=retry_wait,
            retry_deadline_s=settings.neo4j_retry_deadline_s,
            attempt_timeout_s=settings.neo4j_connection_timeout_s,
            read_timeout_s=settings.neo4j_read_timeout_s,
            maintenance_timeout_s=settings.neo4j_maintenance_timeout_s,
            index_wait_s=settings.neo4j_index_wait_s,
            mapping=graph_mapping(settings),
        )

    @property
    def driver(self) -> neo4j.Driver:
        if self._driver is None:
            raise StoreError(f"Neo4j store {self.uri}/{self.database} is closed")
        return self._driver

    def _session(self) -> neo4j.Session:
        return self.driver.session(database=self.database, bookmark_manager=self._bookmarks)

    def _retrying(self, call: Callable[[], T], *, what: str) -> T:
        """Run ``call``, retrying RetryableError only; the last failure names the attempt count."""
        attempts = 0

        def attempt() -> T:
            nonlocal attempts
            attempts += 1
            return call()

        retryer = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self._retry_attempts)
            | tenacity.stop_before_delay(self._last_start_s),
            wait=self._retry_wait,
            retry=tenacity.retry_if_exception_type(RetryableError),
            reraise=True,
            before_sleep=lambda state: self._log_retry(state, what),
        )
        try:
            return retryer(attempt)
        except StoreUnavailableError as exc:
            if attempts <= 1:
                raise
            raise StoreUnavailableError(
                f"{exc} (gave up after {attempts} attempts within store.neo4j_retry_deadline_s = "
                f"{self._retry_deadline_s:g} s)",
                hint=exc.hint,
            ) from exc

    def _log_retry(self, state: tenacity.RetryCallState, what: str) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "Neo4j %s failed (attempt %d/%d), retrying: %s",
            what,
            state.attempt_number,
            self._retry_attempts,
            error,
        )

    def _verify(self) -> None:
        with map_store_errors(uri=self.uri):
            self.driver.verify_connectivity()
            agent = str(getattr(self.driver.get_server_info(), "agent", ""))
        check_server_version(agent, self.uri)

    def _prepare(self, query: Query, params: Mapping[str, Any] | None) -> tuple[Query, dict[str, Any]]:
        """The kernel as this database runs it (mapped, dynamic names made literal) and its
        checked parameters."""
        given = dict(params or {})
        query.check_params(given)
        rendered = literal_dynamic_names(self.mapping.render(query), given)
        if self._index_aliases and "queryNodes" in rendered.text:
            rendered = replace(rendered, text=apply_aliases(rendered.text, self._index_aliases))
        return rendered, given

    def run(self, query: Query, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one read kernel in a read transaction and return its rows as plain dicts.

        Raises:
            QueryError: wrong parameters (before anything is sent), a failed query, or one that
                ran past ``read_timeout_s``.
            MissingIndexError: the kernel queries an index that does not exist.
            StoreUnavailableError: the server is unreachable after retries.
        """
        query, values = self._prepare(query, params)
        timeout = self._maintenance_timeout_s if query.name in MAINTENANCE_KERNELS else self._read_timeout_s

        # a managed transaction takes its timeout from the function (tx.run refuses a neo4j.Query)
        @import_neo4j().unit_of_work(timeout=timeout)
        def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
            # rows must be read inside the transaction: a Result is dead once it closes
            return [{key: _plain(value) for key, value in rec.items()} for rec in tx.run(query.body, values)]

        def once() -> list[dict[str, Any]]:
            with map_store_errors(query, uri=self.uri), self._session() as session:
                return session.execute_read(work)

        return self._retrying(once, what=f"query {query.name}")

    def write(self, statements: Sequence[Statement]) -> list[WriteSummary]:
        """Run write kernels in ONE transaction; one summary per statement, in order.

        A single schema statement (CREATE/DROP INDEX/CONSTRAINT) runs as an auto-commit query,
        because Neo4j refuses schema changes inside a transaction that also writes data. The
        whole transaction is retried on transient failures, which is safe because write kernels
        are idempotent ``MERGE``/``SET``.

        Raises:
            QueryError: wrong parameters for any statement (nothing is sent), a schema statement
                batched with others, or a failed statement.
            StoreUnavailableError: the server is unreachable after retries.
        """
        prepared = [self._prepare(st.query, st.params) for st in statements]
        if not prepared:
            return []
        schema = [q for q, _ in prepared if is_schema_statement(q)]
        if schema and len(prepared) > 1:
            raise QueryError(
                f"{schema[0].path}: a schema statement cannot share a transaction with other statements",
                query=schema[0].name,
                hint="write each index/constraint statement on its own (kgqa.store.schema.run_ddl)",
            )
        if schema:
            query, values = prepared[0]
            return self._retrying(lambda: self._auto_commit(query, values), what=f"schema {query.name}")
        return self._retrying(lambda: self._write_transaction(prepared), what="write")

    def _auto_commit(self, query: Query, values: dict[str, Any]) -> list[WriteSummary]:
        """A schema statement on its own; the index it created (and only that one) is awaited
        before this returns, so the next call never meets it POPULATING (a dropped one needs no
        wait)."""
        self._index_aliases = {}  # the schema changes: check_search_indexes resolves them again
        with map_store_errors(query, uri=self.uri), self._session() as session:
            summary = _summary(session.run(query.body, values).consume().counters)
            name = created_name(query.body)
            if name is not None:

                def show(index: str) -> list[dict[str, Any]]:
                    return [dict(rec.items()) for rec in session.run(_SHOW_INDEX, {"name": index})]

                await_index(show, name, deadline_s=self._index_wait_s)
            return [summary]

    def _write_transaction(self, prepared: list[tuple[Query, dict[str, Any]]]) -> list[WriteSummary]:
        def work(tx: neo4j.ManagedTransaction) -> list[WriteSummary]:
            summaries = []
            for query, values in prepared:
                with map_store_errors(query, uri=self.uri):  # names the statement that failed
                    summaries.append(_summary(tx.run(query.body, values).consume().counters))
            return summaries

        incomplete = import_neo4j().exceptions.IncompleteCommit
        try:
            with map_store_errors(uri=self.uri), self._session() as session:
                return session.execute_write(work)
        except StoreUnavailableError as exc:
            if not isinstance(exc.__cause__, incomplete):
                raise
            return self._after_incomplete_commit(prepared, exc)

    def _after_incomplete_commit(
        self, prepared: list[tuple[Query, dict[str, Any]]], exc: StoreUnavailableError
    ) -> list[WriteSummary]:
        """The connection dropped while committing: find out whether the commit happened.

        A write that carries an ingest resume point committed exactly when the resume point is
        stored; it is then done (its counters are unknown: zeros) and otherwise re-run. Other
        writes are re-run when every statement is idempotent (MERGE/SET), else refused.
        """
        progress = next((v for q, v in prepared if q.name == "ingest_progress_set"), None)
        if progress is not None:
            rows = self.run(queries.get("ingest_progress_get"), {"source_key": progress["source_key"]})
            stored = rows[0] if rows else {}
            if (
                stored.get("lines_done") == progress["lines_done"]
                and stored.get("complete") == progress["complete"]
            ):
                log.warning("the commit's outcome was unknown; its resume point is stored, so it committed")
                return [WriteSummary() for _ in prepared]
            log.warning("the commit's outcome was unknown; its resume point is absent, so it is re-run")
            raise exc
        blind = [q.name for q, _ in prepared if q.name in NOT_IDEMPOTENT]
        if not blind:
            raise exc  # idempotent: re-running it changes nothing that committed
        raise StoreError(
            f"the connection to Neo4j at {self.uri} dropped while committing {', '.join(blind)}; whether it "
            "committed is unknown and a re-run could apply it twice",
            hint="re-run the command: kgqa ingest resumes from its last stored resume point",
        ) from exc

    def info(self) -> StoreInfo:
        return read_store_info(self, backend=self.backend, location=f"{self.uri}/{self.database}")

    def check_search_indexes(self, meta: EmbeddingMeta) -> None:
        """Pre-flight for the ask path: the search indexes exist, are ONLINE and fit the embedder.

        Neo4j-specific because Neo4j builds indexes in the background: right after ``kgqa embed``
        a vector index can still be POPULATING and return partial results, which the embedded
        store never does. ``schema.check_embedding_meta`` checks the recorded model; this checks
        the indexes themselves.

        Indexes are found by schema: where kgqa's own is absent but one of the user's has the same
        type, label and property, that one is used (and the kernels are sent its name).

        Raises:
            MissingIndexError: no index of a ``SEARCH_INDEXES`` schema exists.
            StoreError: an index is still populating or has failed.
            SchemaMismatchError: a vector index's dimension or similarity differs from ``meta``.
        """
        present = self.info().indexes
        self._index_aliases = index_aliases(present, self.mapping)  # reuse a user's equivalent index
        indexes = {ix.name: ix for ix in present}
        for kgqa_name, ingest_command in SEARCH_INDEXES.items():
            name = self.mapping.index_name(kgqa_name)
            command = ingest_command if self.mapping.is_default else "kgqa prepare"
            index = indexes.get(self._index_aliases.get(name, name))
            if index is None:
                kind, labels, props = schema_of(self.mapping, kgqa_name)
                raise MissingIndexError(
                    f"no {kind} index on :{labels[0]}({props[0]}) (kgqa's is named '{name}') in Neo4j at "
                    f"{self.uri}/{self.database}",
                    hint=f"run '{command}' against this database",
                )
            name = index.name
            if index.state.upper() != "ONLINE":
                raise StoreError(
                    f"index '{name}' is {index.state}, not ONLINE, in Neo4j at {self.uri}/{self.database}",
                    hint="wait until SHOW INDEXES says ONLINE (in Browser, "
                    f"CALL db.awaitIndex('{name}', 3600) waits for it alone)"
                    if index.state.upper() == "POPULATING"
                    else f"drop it (DROP INDEX {name}) and re-run '{command}'",
                )
            same_similarity = (index.similarity or "").lower() == meta.similarity.lower()
            if index.dimensions is not None and (index.dimensions != meta.dimension or not same_similarity):
                raise SchemaMismatchError(
                    f"vector index '{name}' has {index.dimensions} dims ({index.similarity}) but embedder "
                    f"'{meta.model_id}' gives {meta.dimension} ({meta.similarity})",
                    hint="re-embed with 'kgqa embed --reembed', or set embedder.model to the index's model",
                )

    def close(self) -> None:
        if self._driver is not None:
            driver, self._driver = self._driver, None
            with map_store_errors(uri=self.uri):
                driver.close()

    def __enter__(self) -> Neo4jStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
