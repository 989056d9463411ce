"""Neo4jStore against a mocked driver: the driver is the one boundary no test here can run for real.

The mocks are spec'd on the real ``neo4j`` classes and the errors are the driver's own exception
classes, built the way the driver builds them from a server FAILURE message, so what is tested is
our behaviour at that boundary: what we send, how rows come back, what is retried and how errors
are translated. ``tests/integration/test_neo4j_live.py`` runs the same kernels on a real server.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from unittest.mock import MagicMock

import pytest
import tenacity
from pydantic import SecretStr

neo4j = pytest.importorskip("neo4j")
from neo4j.exceptions import (  # noqa: E402
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)
from neo4j.graph import Graph, Node, Relationship  # noqa: E402

from kgqa.config import StoreSettings  # noqa: E402
from kgqa.errors import (  # noqa: E402
    ConfigError,
    MissingIndexError,
    QueryError,
    RetryableError,
    SchemaMismatchError,
    StoreAuthError,
    StoreError,
    StoreMemoryError,
    StoreUnavailableError,
)
from kgqa.store import queries  # noqa: E402
from kgqa.store.neo4j_store import Neo4jStore, is_schema_statement  # noqa: E402
from kgqa.store.protocol import GraphStore, Statement  # noqa: E402
from kgqa.types import EmbeddingMeta, WriteSummary  # noqa: E402

URI = "bolt://graph.example:7687"
SHOW_INDEX = "SHOW INDEXES YIELD name, state, failureMessage WHERE name = $name RETURN state, failureMessage"
ATTEMPTS = 3
META_PARAMS = {"model_id": "m", "dimension": 4, "similarity": "cosine", "schema_version": 1}


def server_error(code: str, message: str, **gql: Any) -> Neo4jError:
    """A driver exception exactly as the driver hydrates it from a server FAILURE message."""
    if gql:
        return Neo4jError._hydrate_gql(neo4j_code=code, message=message, **gql)
    return Neo4jError._hydrate_neo4j(code=code, message=message)


def result(records: Iterable[Mapping[str, Any]] = (), **counters: int) -> MagicMock:
    """A spec'd ``neo4j.Result`` yielding real ``Record``s and real ``SummaryCounters``."""
    res = MagicMock(spec=neo4j.Result)
    res.__iter__.return_value = iter([neo4j.Record(dict(r)) for r in records])
    summary = MagicMock(spec=neo4j.ResultSummary)
    summary.counters = neo4j.SummaryCounters({k.replace("_", "-"): v for k, v in counters.items()})
    res.consume.return_value = summary
    return res


def replay(*replies: MagicMock | Exception) -> Callable[..., MagicMock]:
    """A ``tx.run`` side effect that answers (or raises) the given replies in order."""
    queue = list(replies)

    def run(*args: Any, **kwargs: Any) -> MagicMock:
        reply = queue.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    return run


@dataclass
class Bolt:
    """A spec'd driver whose sessions run transaction functions on one spec'd transaction."""

    driver: MagicMock = field(default_factory=lambda: MagicMock(spec=neo4j.Driver))
    session: MagicMock = field(default_factory=lambda: MagicMock(spec=neo4j.Session))
    tx: MagicMock = field(default_factory=lambda: MagicMock(spec=neo4j.ManagedTransaction))

    def __post_init__(self) -> None:
        self.driver.session.return_value = self.session
        self.session.__enter__.return_value = self.session
        self.session.execute_read.side_effect = lambda fn, *a, **k: fn(self.tx, *a, **k)
        self.session.execute_write.side_effect = lambda fn, *a, **k: fn(self.tx, *a, **k)
        self.tx.run.side_effect = lambda text, *a, **k: sent_text(text) and result()

    def answer(self, by_kernel: Mapping[str, Callable[[], MagicMock]]) -> None:
        """Make ``tx.run`` reply per kernel (matched on its body text)."""
        bodies = {queries.get(name).body: make for name, make in by_kernel.items()}
        self.tx.run.side_effect = lambda text, params=None: bodies[sent_text(text)]()


def sent_text(statement: Any) -> str:
    """What was passed to ``tx.run``, which (like the driver) takes text only: a ``neo4j.Query``
    is refused there (its timeout would be ignored)."""
    if not isinstance(statement, str):
        raise TypeError("Query object is only supported for session.run")
    return statement


@pytest.fixture
def bolt() -> Bolt:
    return Bolt()


def open_store(bolt: Bolt, *, attempts: int = ATTEMPTS) -> Neo4jStore:
    store = Neo4jStore(
        bolt.driver, uri=URI, database="kgqa", retry_attempts=attempts, retry_wait=tenacity.wait_none()
    )
    bolt.driver.reset_mock(return_value=False, side_effect=False)
    return store


@pytest.fixture
def store(bolt: Bolt) -> Neo4jStore:
    return open_store(bolt)


def settings(**overrides: Any) -> StoreSettings:
    values: dict[str, Any] = {"backend": "neo4j", "neo4j_uri": URI, "neo4j_password": SecretStr("s3cret")}
    return StoreSettings(**(values | overrides))


# --- protocol, reads -------------------------------------------------------------------------------


def test_neo4j_store_satisfies_graph_store_protocol(store: Neo4jStore) -> None:
    assert isinstance(store, GraphStore)


def test_run_sends_kernel_body_and_params_in_one_read_transaction(bolt: Bolt, store: Neo4jStore) -> None:
    kernel = queries.get("link_fulltext")  # declares a parameter named `query`: must not clash with tx.run
    store.run(kernel, {"query": "matrix~", "limit": 5})

    bolt.driver.session.assert_called_once_with(database="kgqa", bookmark_manager=store._bookmarks)
    bolt.session.execute_read.assert_called_once()
    bolt.session.execute_write.assert_not_called()
    bolt.tx.run.assert_called_once_with(kernel.body, {"query": "matrix~", "limit": 5})
    (work,), _ = bolt.session.execute_read.call_args
    assert work.timeout == 120.0  # the read transaction's server-side timeout
    assert not kernel.body.startswith("//")


def test_every_session_shares_one_bookmark_manager(bolt: Bolt, store: Neo4jStore) -> None:
    store.write([Statement(queries.get("meta_set"), META_PARAMS)])
    store.run(queries.get("meta_get"))
    managers = [c.kwargs["bookmark_manager"] for c in bolt.driver.session.call_args_list]
    assert len(managers) == 2 and managers[0] is managers[1]
    assert isinstance(managers[0], neo4j.api.BookmarkManager)


def test_run_materialises_records_into_plain_dicts(bolt: Bolt, store: Neo4jStore) -> None:
    rows = [{"id": "m1", "name": "The Matrix", "eid": "4:db:1", "name_norm": "matrix"}]
    bolt.tx.run.side_effect = lambda *a: result(rows)

    got = store.run(queries.get("link_exact"), {"names_norm": ["matrix"], "limit": 10})

    assert got == rows
    assert all(type(row) is dict for row in got)


def test_run_keeps_vector_scores_on_neo4j_scale(bolt: Bolt, store: Neo4jStore) -> None:
    rows = [{"id": "m1", "name": "The Matrix", "eid": "4:db:1", "score": 0.25}]
    bolt.tx.run.side_effect = lambda *a: result(rows)

    got = store.run(queries.get("link_vector"), {"embedding": [0.0, 1.0], "k": 1})

    assert got[0]["score"] == 0.25  # kglite maps raw cosine; Neo4j already returns (1 + cos) / 2


def test_run_turns_driver_graph_values_into_dicts(bolt: Bolt, store: Neo4jStore) -> None:
    graph = Graph()
    head = Node(graph, "4:db:1", 1, ["Entity", "Movie"], {"id": "m1"})
    tail = Node(graph, "4:db:2", 2, ["Entity"], {"id": "p1"})
    rel = graph.relationship_type("DIRECTED_BY")(graph, "5:db:9", 9, {"since": 1999})
    rel._start_node, rel._end_node = head, tail
    assert isinstance(rel, Relationship)
    bolt.tx.run.side_effect = lambda *a: result([{"n": head, "rels": [rel]}])

    [row] = store.run(queries.get("link_exact"), {"names_norm": ["matrix"], "limit": 1})

    assert row["n"] == {"element_id": "4:db:1", "labels": ["Entity", "Movie"], "properties": {"id": "m1"}}
    assert row["rels"] == [
        {
            "element_id": "5:db:9",
            "type": "DIRECTED_BY",
            "start_element_id": "4:db:1",
            "end_element_id": "4:db:2",
            "properties": {"since": 1999},
        }
    ]


def test_run_rejects_wrong_params_before_contacting_the_driver(bolt: Bolt, store: Neo4jStore) -> None:
    with pytest.raises(QueryError, match=r"cypher/link_exact\.cypher.*missing \['limit'\]") as info:
        store.run(queries.get("link_exact"), {"names_norm": ["matrix"], "limt": 10})

    assert info.value.query == "link_exact"
    bolt.driver.session.assert_not_called()
    bolt.tx.run.assert_not_called()


# --- writes ----------------------------------------------------------------------------------------


def test_write_runs_all_statements_in_one_write_transaction_with_counters_per_statement(
    bolt: Bolt, store: Neo4jStore
) -> None:
    bolt.tx.run.side_effect = replay(
        result(nodes_created=2, properties_set=6),
        result(nodes_created=1, relationships_created=3, properties_set=2),
        result(labels_added=2, properties_set=2),
    )
    entity = {"id": "m1", "name": "M", "name_norm": "m", "text": None}
    statements = [
        Statement(queries.get("ingest_entities"), {"rows": [entity]}),
        Statement(queries.get("ingest_triples"), {"rel_type": "DIRECTED_BY", "rows": []}),
        Statement(queries.get("ingest_entity_labels"), {"label": "Movie", "ids": ["m1"]}),
    ]

    summaries = store.write(statements)

    assert summaries == [
        WriteSummary(nodes_created=2, properties_set=6),
        WriteSummary(nodes_created=1, relationships_created=3, properties_set=2),
        WriteSummary(labels_added=2, properties_set=2),
    ]
    bolt.session.execute_write.assert_called_once()
    bolt.session.execute_read.assert_not_called()
    bolt.session.run.assert_not_called()
    sent = [c.args for c in bolt.tx.run.call_args_list]
    literal_type = statements[1].query.body.replace(":$(rel_type)", ":`DIRECTED_BY`")
    literal_label = statements[2].query.body.replace(":$(label)", ":`Movie`")
    bodies = [statements[0].query.body, literal_type, literal_label]
    assert sent == [(body, dict(st.params)) for body, st in zip(bodies, statements, strict=True)]


def test_dynamic_types_are_sent_as_one_quoted_literal_per_statement(bolt: Bolt, store: Neo4jStore) -> None:
    store.write([Statement(queries.get("ingest_triples"), {"rel_type": "HAS `ODD` TYPE", "rows": []})])
    (text, params), _ = bolt.tx.run.call_args
    assert "CREATE (h)-[:`HAS ``ODD`` TYPE`]->(t)" in text and "$(" not in text
    assert params["rel_type"] == "HAS `ODD` TYPE"  # still bound by the WITH the kernel starts with


def test_write_checks_every_statement_before_sending_any(bolt: Bolt, store: Neo4jStore) -> None:
    statements = [
        Statement(queries.get("meta_get"), {}),
        Statement(queries.get("question_save"), {"id": "q1"}),
    ]
    with pytest.raises(QueryError, match=r"cypher/question_save\.cypher"):
        store.write(statements)
    bolt.driver.session.assert_not_called()


def test_write_names_the_statement_that_failed_inside_the_transaction(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.tx.run.side_effect = replay(
        result(), server_error("Neo.ClientError.Statement.TypeError", "Expected a list")
    )
    statements = [
        Statement(
            queries.get("meta_set"),
            {"model_id": "m", "dimension": 4, "similarity": "cosine", "schema_version": 1},
        ),
        Statement(
            queries.get("question_save"),
            {
                "id": "q1",
                "text": "t",
                "asked_at": "now",
                "answers": "x",
                "topic_ids": [],
                "answer_ids": [],
                "evidence_heads": [],
                "evidence_types": [],
                "evidence_tails": [],
            },
        ),
    ]
    with pytest.raises(QueryError, match=r"cypher/question_save\.cypher.*TypeError") as info:
        store.write(statements)
    assert info.value.query == "question_save"
    assert bolt.session.execute_write.call_count == 1  # a type error is not retried


def test_write_runs_a_single_schema_statement_as_auto_commit(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.session.run.return_value = result()
    kernel = queries.get("index_create_vector_entity")

    store.write([Statement(kernel, {"dimensions": 384, "similarity": "cosine"})])

    sent = [c.args for c in bolt.session.run.call_args_list]
    assert sent == [
        (kernel.body, {"dimensions": 384, "similarity": "cosine"}),
        (SHOW_INDEX, {"name": "entity_embedding"}),  # its own index only: never db.awaitIndexes
    ]
    bolt.session.execute_write.assert_not_called()


def test_dropping_an_index_does_not_wait_for_indexes(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.session.run.return_value = result()
    store.write([Statement(queries.get("index_drop_vector_entity"), {})])
    assert [c.args[0] for c in bolt.session.run.call_args_list] == [
        queries.get("index_drop_vector_entity").body
    ]


def test_write_rejects_schema_statement_batched_with_data_writes(bolt: Bolt, store: Neo4jStore) -> None:
    statements = [
        Statement(queries.get("schema_constraint_entity_id"), {}),
        Statement(queries.get("ingest_relation_types"), {"rows": []}),
    ]
    with pytest.raises(QueryError, match=r"schema_constraint_entity_id\.cypher.*cannot share") as info:
        store.write(statements)
    assert "run_ddl" in (info.value.hint or "")
    bolt.driver.session.assert_not_called()


def test_write_of_no_statements_sends_nothing(bolt: Bolt, store: Neo4jStore) -> None:
    assert store.write([]) == []
    bolt.driver.session.assert_not_called()


@pytest.mark.parametrize("name", queries.names())
def test_is_schema_statement_matches_exactly_the_ddl_kernels(name: str) -> None:
    ddl = name.startswith(("schema_", "index_create_", "index_drop_"))  # the naming rule for DDL kernels
    assert is_schema_statement(queries.get(name)) is ddl


# --- retries ---------------------------------------------------------------------------------------


def test_run_retries_transient_errors_then_succeeds(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.tx.run.side_effect = replay(
        server_error("Neo.TransientError.Transaction.DeadlockDetected", "deadlock"),
        ServiceUnavailable("connection reset"),
        result([{"label": "Entity", "count": 6}]),
    )

    assert store.run(queries.get("stats_labels")) == [{"label": "Entity", "count": 6}]
    assert bolt.tx.run.call_count == 3
    assert bolt.session.execute_read.call_count == 3


def test_run_gives_up_after_retry_attempts_with_store_unavailable(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.tx.run.side_effect = SessionExpired("session expired")

    expected = rf"stats_labels.*{URI}.*gave up after {ATTEMPTS} attempts"
    with pytest.raises(StoreUnavailableError, match=expected) as info:
        store.run(queries.get("stats_labels"))

    assert isinstance(info.value, RetryableError)
    assert bolt.tx.run.call_count == ATTEMPTS
    cause = info.value.__cause__
    assert isinstance(cause, StoreUnavailableError) and isinstance(cause.__cause__, SessionExpired)


def test_run_does_not_retry_client_errors(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.tx.run.side_effect = server_error("Neo.ClientError.Statement.ArgumentError", "bad argument")

    with pytest.raises(QueryError, match=r"cypher/stats_labels\.cypher.*ArgumentError.*bad argument"):
        store.run(queries.get("stats_labels"))
    assert bolt.tx.run.call_count == 1


def test_write_retries_the_whole_transaction_on_transient_error(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.tx.run.side_effect = replay(
        server_error("Neo.TransientError.General.DatabaseUnavailable", "starting"), result()
    )
    store.write([Statement(queries.get("ingest_relation_types"), {"rows": []})])
    assert bolt.session.execute_write.call_count == 2


@pytest.mark.parametrize(
    "code",
    [
        "Neo.TransientError.General.MemoryPoolOutOfMemoryError",
        "Neo.ClientError.General.TransactionOutOfMemoryError",
        "Neo.TransientError.General.OutOfMemoryError",
    ],
)
def test_out_of_memory_is_a_store_memory_error_and_not_retried(
    bolt: Bolt, store: Neo4jStore, code: str
) -> None:
    bolt.tx.run.side_effect = server_error(
        code, "The allocation of an extra 2.0 MiB would use more than the limit"
    )
    with pytest.raises(StoreMemoryError, match="ran out of transaction memory") as info:
        store.write([Statement(queries.get("ingest_relation_types"), {"rows": []})])
    assert not isinstance(info.value, RetryableError)
    assert "batch" in (info.value.hint or "")
    assert bolt.session.execute_write.call_count == 1  # the same batch would fail again


class MessagelessUnavailable(ServiceUnavailable):
    """A driver 5.2x ``ServiceUnavailable`` whose ``.message`` raises instead of naming the cause."""

    @property
    def message(self) -> str:  # type: ignore[override]
        raise AttributeError("message")


def test_errors_are_described_with_str_not_message(bolt: Bolt) -> None:
    bolt.driver.verify_connectivity.side_effect = MessagelessUnavailable("Connection refused (os error 111)")
    with pytest.raises(StoreUnavailableError, match="Connection refused"):
        open_store(bolt, attempts=1)


def test_a_created_index_is_awaited_in_the_same_session(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.session.run.return_value = result()
    store.write([Statement(queries.get("index_create_entity_name_norm"), {})])
    assert bolt.session.run.call_args_list[-1].args == (SHOW_INDEX, {"name": "entity_name_norm"})
    assert bolt.driver.session.call_count == 1


def test_a_created_index_is_polled_until_online_and_a_users_failed_index_is_ignored(
    bolt: Bolt, store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kgqa.store.neo4j_indexes.time.sleep", lambda s: None)
    states = [[{"state": "POPULATING", "failureMessage": None}]] * 2 + [[{"state": "ONLINE"}]]
    replies = iter([result(), *(result(r) for r in states)])
    bolt.session.run.side_effect = lambda text, params=None: next(replies)
    store.write([Statement(queries.get("index_create_fulltext_entity"), {})])
    sent = [c.args for c in bolt.session.run.call_args_list]
    assert sent[1:] == [(SHOW_INDEX, {"name": "entity_name"})] * 3  # ours by name; no other index is read
    assert not any("awaitIndexes" in str(c) for c in sent)


def test_await_index_raises_on_its_own_failed_index_and_gives_up_at_the_deadline() -> None:
    from kgqa.store.neo4j_indexes import await_index

    failed = [{"state": "FAILED", "failureMessage": "analyzer missing"}]
    with pytest.raises(StoreError, match="FAILED to populate: analyzer missing") as info:
        await_index(lambda name: failed, "kgqa_entity_name", deadline_s=10)
    assert "DROP INDEX kgqa_entity_name" in (info.value.hint or "")
    now = iter(range(100))
    populating = [{"state": "POPULATING"}]
    assert (
        await_index(lambda n: populating, "x", deadline_s=5, sleep=lambda s: None, clock=lambda: next(now))
        == "POPULATING"
    )
    assert await_index(lambda n: [], "x", deadline_s=5) == "ABSENT"  # IF NOT EXISTS met an equivalent


# --- error translation -----------------------------------------------------------------------------


def test_syntax_error_becomes_query_error_at_the_file_line(bolt: Bolt, store: Neo4jStore) -> None:
    kernel = queries.get("link_exact")
    header_lines = sum(1 for ln in kernel.text.splitlines() if ln.startswith("//"))
    bolt.tx.run.side_effect = server_error(
        "Neo.ClientError.Statement.SyntaxError",
        "Invalid input 'RETRN' (line 2, column 1 (offset: 50))",
        gql_status="42001",
        description="error: syntax error or access rule violation - invalid syntax",
        diagnostic_record={"_position": {"line": 2, "column": 1, "offset": 50}},
    )

    with pytest.raises(QueryError, match=r"cypher/link_exact\.cypher:\d+:1: Cypher syntax error") as info:
        store.run(kernel, {"names_norm": [], "limit": 1})

    assert (info.value.query, info.value.line, info.value.col) == ("link_exact", header_lines + 2, 1)
    assert bolt.tx.run.call_count == 1


def test_syntax_error_position_falls_back_to_the_message(bolt: Bolt, store: Neo4jStore) -> None:
    kernel = queries.get("meta_get")
    bolt.tx.run.side_effect = server_error(
        "Neo.ClientError.Statement.SyntaxError", "Invalid input (line 1, column 7 (offset: 6))"
    )
    with pytest.raises(QueryError) as info:
        store.run(kernel)
    first_body_line = kernel.text.splitlines().index(kernel.body.splitlines()[0]) + 1
    assert (info.value.line, info.value.col) == (first_body_line, 7)


@pytest.mark.parametrize(
    ("code", "message", "command"),
    [
        (
            "Neo.ClientError.Procedure.ProcedureCallFailed",
            "Failed to invoke procedure `db.index.vector.queryNodes`: Caused by: "
            "java.lang.IllegalArgumentException: There is no such vector schema index: entity_embedding",
            "kgqa embed",
        ),
        (
            "Neo.ClientError.Procedure.ProcedureCallFailed",
            "Failed to invoke procedure `db.index.fulltext.queryNodes`: Caused by: "
            "java.lang.IllegalArgumentException: There is no such fulltext schema index: entity_name",
            "kgqa ingest",
        ),
        ("Neo.ClientError.Schema.IndexNotFound", "Index not found", "kgqa ingest"),
    ],
)
def test_missing_index_becomes_missing_index_error_with_fix(
    bolt: Bolt, store: Neo4jStore, code: str, message: str, command: str
) -> None:
    bolt.tx.run.side_effect = server_error(code, message)

    with pytest.raises(MissingIndexError) as info:
        store.run(queries.get("link_vector"), {"embedding": [0.1], "k": 3})

    assert command in (info.value.hint or "")
    assert isinstance(info.value.__cause__, Neo4jError)


def test_other_procedure_failure_stays_a_query_error(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.tx.run.side_effect = server_error(
        "Neo.ClientError.Procedure.ProcedureCallFailed",
        "Failed to invoke procedure `db.index.vector.queryNodes`: Index query vector has 3 dimensions, "
        "but indexed vectors have 384.",
    )
    with pytest.raises(QueryError) as info:
        store.run(queries.get("link_vector"), {"embedding": [0.1, 0.2, 0.3], "k": 3})
    assert not isinstance(info.value, MissingIndexError)
    assert "384" in str(info.value)


def test_unknown_database_names_the_setting(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.driver.session.side_effect = server_error(
        "Neo.ClientError.Database.DatabaseNotFound", "Database does not exist. Database name: 'kgqa'."
    )
    with pytest.raises(StoreError, match="no such database") as info:
        store.run(queries.get("stats_labels"))
    assert "KGQA_STORE__NEO4J_DATABASE" in (info.value.hint or "")


def test_auth_error_during_a_query_becomes_store_auth_error(bolt: Bolt, store: Neo4jStore) -> None:
    bolt.tx.run.side_effect = server_error("Neo.ClientError.Security.Unauthorized", "authentication failure")
    with pytest.raises(StoreAuthError):
        store.run(queries.get("stats_labels"))
    assert bolt.tx.run.call_count == 1


# --- opening and closing ---------------------------------------------------------------------------


def test_open_verifies_connectivity(bolt: Bolt) -> None:
    Neo4jStore(bolt.driver, uri=URI, database="neo4j", retry_wait=tenacity.wait_none())
    bolt.driver.verify_connectivity.assert_called_once_with()


def test_open_maps_auth_error_to_store_auth_error_without_retrying(bolt: Bolt) -> None:
    bolt.driver.verify_connectivity.side_effect = server_error(
        "Neo.ClientError.Security.Unauthorized", "The client is unauthorized due to authentication failure."
    )
    with pytest.raises(StoreAuthError, match=URI) as info:
        open_store(bolt)

    assert "KGQA_STORE__NEO4J_USER" in (info.value.hint or "")
    assert "NEO4J_PASSWORD" in (info.value.hint or "")
    bolt.driver.verify_connectivity.assert_called_once()
    bolt.driver.close.assert_called_once()


def test_open_maps_service_unavailable_to_store_unavailable_naming_the_uri(bolt: Bolt) -> None:
    bolt.driver.verify_connectivity.side_effect = ServiceUnavailable(
        "Couldn't connect to graph.example:7687 (reason [Errno 111] Connection refused)"
    )
    with pytest.raises(StoreUnavailableError, match=rf"cannot reach Neo4j at {URI}") as info:
        open_store(bolt)

    assert "docker compose up -d neo4j" in (info.value.hint or "")
    assert bolt.driver.verify_connectivity.call_count == ATTEMPTS  # the server may still be starting
    bolt.driver.close.assert_called_once()


def test_close_is_idempotent_and_the_context_manager_closes(bolt: Bolt) -> None:
    with open_store(bolt) as store:
        pass
    store.close()
    bolt.driver.close.assert_called_once()
    with pytest.raises(StoreError, match="closed"):
        store.run(queries.get("stats_labels"))


# --- from_settings ---------------------------------------------------------------------------------


@pytest.fixture
def driver_factory(monkeypatch: pytest.MonkeyPatch, bolt: Bolt) -> MagicMock:
    factory = MagicMock(return_value=bolt.driver)
    monkeypatch.setattr(neo4j.GraphDatabase, "driver", factory)
    return factory


def test_from_settings_builds_a_bounded_driver(driver_factory: MagicMock, bolt: Bolt) -> None:
    store = Neo4jStore.from_settings(
        settings(
            neo4j_user="reader",
            neo4j_database="movies",
            neo4j_max_pool_size=4,
            neo4j_connection_timeout_s=2.5,
            neo4j_read_timeout_s=7.0,
            entity_label="Film",
        ),
        retry_wait=tenacity.wait_none(),
    )

    driver_factory.assert_called_once()
    args, kwargs = driver_factory.call_args
    assert args == (URI,)
    assert kwargs["auth"] == ("reader", "s3cret")
    assert kwargs["max_connection_pool_size"] == 4
    assert kwargs["connection_timeout"] == kwargs["connection_acquisition_timeout"] == 2.5
    assert kwargs["max_transaction_retry_time"] == 0.0
    store.run(queries.get("entities_get"), {"ids": ["m1"]})
    bolt.driver.session.assert_called_with(database="movies", bookmark_manager=store._bookmarks)
    (sent, _), _ = bolt.tx.run.call_args
    assert bolt.session.execute_read.call_args.args[0].timeout == 7.0
    assert "MATCH (e:`Film` {id: id})" in sent  # the mapping from the settings renders every kernel


def test_from_settings_without_password_is_a_config_error(driver_factory: MagicMock) -> None:
    with pytest.raises(ConfigError) as info:
        Neo4jStore.from_settings(settings(neo4j_password=None))
    assert "NEO4J_PASSWORD" in (info.value.hint or "")
    driver_factory.assert_not_called()


@pytest.mark.parametrize("uri", ["http://localhost:7474", "localhost:7687"])
def test_from_settings_rejects_a_non_bolt_uri(driver_factory: MagicMock, uri: str) -> None:
    with pytest.raises(ConfigError, match="not a Bolt URI") as info:
        Neo4jStore.from_settings(settings(neo4j_uri=uri))
    assert "bolt://" in (info.value.hint or "")
    driver_factory.assert_not_called()


def test_from_settings_without_the_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "neo4j", None)  # makes `import neo4j` raise ImportError
    with pytest.raises(ConfigError) as info:
        Neo4jStore.from_settings(settings())
    assert "neo4j>=6" in (info.value.hint or "")


@pytest.mark.parametrize("installed", [True, False])
def test_from_settings_says_once_how_to_add_the_rust_codec_when_missing(
    driver_factory: MagicMock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    installed: bool,
) -> None:
    import importlib.util

    from kgqa.store import neo4j_errors

    find_spec = importlib.util.find_spec
    spec = object() if installed else None
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: spec if name == "neo4j._rust" else find_spec(name)
    )
    neo4j_errors.has_rust_codec.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="kgqa.store.neo4j_errors"):
            Neo4jStore.from_settings(settings(), retry_wait=tenacity.wait_none())
            Neo4jStore.from_settings(settings(), retry_wait=tenacity.wait_none())
    finally:
        neo4j_errors.has_rust_codec.cache_clear()
    warnings = [r.getMessage() for r in caplog.records if "Rust codec" in r.getMessage()]
    if installed:
        assert warnings == []
    else:
        assert len(warnings) == 1 and 'pip install "kgqa[neo4j]"' in warnings[0]  # once per process


def test_importing_kgqa_store_does_not_import_neo4j() -> None:
    code = "import sys, kgqa.store, kgqa.store.neo4j_store; print('neo4j' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- info and the index pre-flight -----------------------------------------------------------------

META = {"model_id": "minilm", "dimension": 384, "similarity": "cosine", "schema_version": 1}


def index_row(name: str, kind: str, *, state: str = "ONLINE", dims: int | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {"indexProvider": "vector-2.0" if dims else "fulltext-1.0", "indexConfig": {}}
    if dims:
        options["indexConfig"] = {"vector.dimensions": dims, "vector.similarity_function": "COSINE"}
    return {
        "name": name,
        "type": kind,
        "state": state,
        "labelsOrTypes": ["Entity"],
        "properties": ["embedding" if dims else "name"],
        "options": options,
    }


VECTOR_384 = index_row("entity_embedding", "VECTOR", dims=384)
FULLTEXT = index_row("entity_name", "FULLTEXT")
POPULATING = index_row("entity_embedding", "VECTOR", dims=384, state="POPULATING")


def answer_indexes(bolt: Bolt, rows: list[dict[str, Any]]) -> None:
    bolt.answer({"index_list": lambda: result(rows), "meta_get": lambda: result([META])})


def test_info_reads_indexes_and_embedding_meta(bolt: Bolt, store: Neo4jStore) -> None:
    answer_indexes(bolt, [index_row("entity_embedding", "VECTOR", dims=384)])

    info = store.info()

    assert (info.backend, info.location) == ("neo4j", f"{URI}/kgqa")
    assert info.embedding == EmbeddingMeta("minilm", 384, "cosine")
    assert info.schema_version == 1
    [index] = info.indexes
    assert (index.name, index.kind, index.dimensions, index.similarity) == (
        "entity_embedding",
        "VECTOR",
        384,
        "cosine",
    )


def test_check_search_indexes_passes_when_online_and_matching(bolt: Bolt, store: Neo4jStore) -> None:
    answer_indexes(bolt, [VECTOR_384, FULLTEXT])
    store.check_search_indexes(EmbeddingMeta("minilm", 384, "cosine"))


@pytest.mark.parametrize(
    ("rows", "error", "hint"),
    [
        ([FULLTEXT], MissingIndexError, "kgqa embed"),
        ([POPULATING, FULLTEXT], StoreError, "ONLINE"),
        ([index_row("entity_embedding", "VECTOR", dims=768), FULLTEXT], SchemaMismatchError, "--reembed"),
    ],
    ids=["missing", "populating", "wrong-dims"],
)
def test_check_search_indexes_fails_with_a_fix(
    bolt: Bolt, store: Neo4jStore, rows: list[dict[str, Any]], error: type[Exception], hint: str
) -> None:
    answer_indexes(bolt, rows)
    with pytest.raises(error) as info:
        store.check_search_indexes(EmbeddingMeta("minilm", 384, "cosine"))
    assert hint in (getattr(info.value, "hint", None) or "")


def test_from_settings_rejects_a_port_that_is_not_a_number(driver_factory: MagicMock) -> None:
    with pytest.raises(ConfigError, match="port that is not a number"):
        Neo4jStore.from_settings(settings(neo4j_uri="bolt://localhost:notaport"))
    driver_factory.assert_not_called()


# --- deadlines against local servers that are not Neo4j ----------------------------------------------


def _serve(reply: bytes | None) -> tuple[socket.socket, threading.Event, threading.Thread]:
    """A 127.0.0.1 server that answers every connection with ``reply`` (None: never answers).

    Stops by itself within 10 s, or when the returned event is set.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stop = threading.Event()

    def run() -> None:
        held = []
        deadline = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            if reply is None:
                held.append(conn)
            else:
                with conn:
                    conn.recv(1024)
                    conn.sendall(reply)
        for conn in held:
            conn.close()
        listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener, stop, thread


@pytest.mark.parametrize(
    "reply", [None, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"], ids=["silent", "http"]
)
def test_from_settings_gives_up_within_the_retry_deadline_when_the_port_is_not_bolt(
    reply: bytes | None,
) -> None:
    listener, stop, thread = _serve(reply)
    uri = f"bolt://127.0.0.1:{listener.getsockname()[1]}"
    start = time.monotonic()
    try:
        with pytest.raises(StoreUnavailableError, match="expected a Bolt server") as info:
            Neo4jStore.from_settings(
                settings(neo4j_uri=uri, neo4j_connection_timeout_s=0.5, neo4j_retry_deadline_s=1.5)
            )
    finally:
        stop.set()
        thread.join(timeout=5)
    assert time.monotonic() - start < 3.0
    assert uri in str(info.value) and "7474" in (info.value.hint or "")


# --- embedding a database kgqa did not ingest ------------------------------------------------------


def test_embed_on_neo4j_ensures_lookups_writes_float32_vectors_then_builds_vector_indexes(
    bolt: Bolt, store: Neo4jStore, fake_embedder: Any
) -> None:
    from ingest.embedding import embed_store

    sent: list[str] = []
    pending = [[{"id": "m1", "name": "The Matrix", "text": None}], []]
    replies = {
        "index_list": lambda: result(),  # a database without kgqa's indexes
        "meta_get": lambda: result(),
        "meta_set": lambda: result(),
        "meta_set_embedding_complete": lambda: result(),
        "embed_foreign_vectors": lambda: result(),
        "embed_count_pending_entities": lambda: result([{"pending": 0, "keyed": 1, "unkeyed": 0}]),
        "entities_text_present": lambda: result([{"present": False}]),
        "embed_pending_entities": lambda: result(pending.pop(0)),
        "embed_set_entities_vector": lambda: result(properties_set=2),
        "embed_pending_relation_types": lambda: result(),
    }
    names = {queries.get(name).body: name for name in [*replies, *queries.names()]}

    def tx_run(statement: Any, params: Any = None) -> MagicMock:
        name = names[sent_text(statement)]
        sent.append(name)
        return replies[name]()

    def session_run(text: str, params: Any = None) -> MagicMock:
        sent.append(names.get(text, text.split("(")[0]))
        return result()

    bolt.tx.run.side_effect = tx_run
    bolt.session.run.side_effect = session_run

    report = embed_store(store, fake_embedder)

    assert report.entities_embedded == 1
    ddl = [s for s in sent if s.startswith(("schema_", "index_create_", "SHOW INDEXES"))]
    assert ddl[:4] == [
        "schema_constraint_entity_id",  # kgqa's own graph model: the id constraint
        SHOW_INDEX,
        "index_create_entity_name_norm",
        SHOW_INDEX,
    ]
    assert "embed_set_entities" not in sent  # the float64 list SET is the embedded store's
    vectors_written = sent.index("embed_set_entities_vector")
    assert sent.index("index_create_vector_entity") > vectors_written
    assert sent.index("index_create_vector_relation_type") > vectors_written
    assert sent.index("index_create_fulltext_entity") < vectors_written


# --- issue 29: indexes by schema, unknown commits, maintenance deadline, server version ------------


def test_a_users_fulltext_index_on_the_name_is_reused_and_its_name_sent(
    bolt: Bolt, store: Neo4jStore
) -> None:
    users = {**FULLTEXT, "name": "my_titles"}  # the same schema as kgqa's entity_name, another name
    answer_indexes(bolt, [VECTOR_384, users])
    store.check_search_indexes(EmbeddingMeta("minilm", 384, "cosine"))  # not "run kgqa ingest"
    sent: list[str] = []
    bolt.tx.run.side_effect = lambda text, params=None: sent.append(text) or result()
    store.run(queries.get("link_fulltext"), {"query": "matrix", "limit": 5})
    assert "'my_titles'" in sent[0] and "'entity_name'" not in sent[0]


def test_an_index_of_another_schema_is_not_taken_for_kgqas(bolt: Bolt, store: Neo4jStore) -> None:
    other = {**FULLTEXT, "name": "my_titles", "properties": ["title"]}
    answer_indexes(bolt, [VECTOR_384, other])
    with pytest.raises(MissingIndexError, match=r"no FULLTEXT index on :Entity\(name\)"):
        store.check_search_indexes(EmbeddingMeta("minilm", 384, "cosine"))


def _progress_batch(lines_done: int) -> list[Statement]:
    rows = [{"h": "a", "h_norm": "a", "t": "b", "t_norm": "b"}]
    return [
        Statement(queries.get("ingest_triples_absent"), {"rel_type": "R", "rows": rows}),
        Statement(
            queries.get("ingest_progress_set"),
            {"source_key": "k", "source": "s", "lines_done": lines_done, "complete": False},
        ),
    ]


@pytest.mark.parametrize(("stored", "reruns"), [(20, 0), (10, 1)], ids=["committed", "not-committed"])
def test_an_unknown_commit_is_rechecked_by_its_resume_point(
    bolt: Bolt, store: Neo4jStore, stored: int, reruns: int
) -> None:
    from neo4j.exceptions import IncompleteCommit

    calls = {"write": 0}

    def execute_write(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls["write"] += 1
        if calls["write"] == 1:
            raise IncompleteCommit("connection lost while committing")
        return fn(bolt.tx, *args, **kwargs)

    bolt.session.execute_write.side_effect = execute_write
    progress = [{"lines_done": stored, "complete": False, "source": "s"}]
    get = queries.get("ingest_progress_get").body
    bolt.tx.run.side_effect = lambda text, params=None: result(progress) if text == get else result()
    summaries = store.write(_progress_batch(20))
    assert calls["write"] == 1 + reruns  # committed: never re-run (the relationship is not doubled)
    assert len(summaries) == 2


def test_an_unknown_commit_of_a_blind_create_without_resume_point_is_refused(
    bolt: Bolt, store: Neo4jStore
) -> None:
    from neo4j.exceptions import IncompleteCommit

    bolt.session.execute_write.side_effect = IncompleteCommit("connection lost while committing")
    with pytest.raises(StoreError, match="whether it committed is unknown") as info:
        store.write(_progress_batch(20)[:1])
    assert not isinstance(info.value, RetryableError)
    assert bolt.session.execute_write.call_count == 1


def test_an_unknown_commit_of_idempotent_writes_is_retried(bolt: Bolt, store: Neo4jStore) -> None:
    from neo4j.exceptions import IncompleteCommit

    outcomes: list[Any] = [IncompleteCommit("lost"), None]

    def execute_write(fn: Any, *args: Any, **kwargs: Any) -> Any:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return fn(bolt.tx, *args, **kwargs)

    bolt.session.execute_write.side_effect = execute_write
    bolt.tx.run.side_effect = lambda text, params=None: result(properties_set=1)
    store.write([Statement(queries.get("prepare_set_names"), {"rows": [{"id": "m1", "name_norm": "m"}]})])
    assert bolt.session.execute_write.call_count == 2


def test_maintenance_reads_get_their_own_deadline(bolt: Bolt) -> None:
    store = Neo4jStore(
        bolt.driver,
        uri=URI,
        database="kgqa",
        read_timeout_s=120.0,
        maintenance_timeout_s=5400.0,
        retry_wait=tenacity.wait_none(),
    )
    store.run(queries.get("embed_count_pending_entities"), {"model_id": "m"})
    assert bolt.session.execute_read.call_args.args[0].timeout == 5400.0
    store.run(queries.get("entities_get"), {"ids": ["m1"]})
    assert bolt.session.execute_read.call_args.args[0].timeout == 120.0


@pytest.mark.parametrize(
    ("agent", "refused"), [("Neo4j/5.25.1", True), ("Neo4j/5.26.0", False), ("Neo4j/2025.10.1", False)]
)
def test_servers_older_than_5_26_are_refused_at_open(bolt: Bolt, agent: str, refused: bool) -> None:
    bolt.driver.get_server_info.return_value = MagicMock(agent=agent)
    if refused:
        with pytest.raises(StoreError, match="needs Neo4j 5.26 or later") as info:
            open_store(bolt)
        assert "upgrade" in (info.value.hint or "")
        assert bolt.driver.verify_connectivity.call_count == 1  # not retried
    else:
        open_store(bolt)


def test_a_literal_type_leaves_no_unused_binding_and_expands_one_type() -> None:
    from kgqa.store.neo4j_store import literal_dynamic_names

    count = literal_dynamic_names(queries.get("stats_relationship_type_count"), {"rel_type": "STARRED"})
    assert count.body == "MATCH ()-[r:`STARRED`]->()\nRETURN count(r) AS count"  # no leading WITH
    triples = literal_dynamic_names(queries.get("ingest_triples"), {"rel_type": "R", "rows": []})
    assert triples.body.startswith("WITH $rel_type AS rel_type")  # still used further down
    params = {"source_ids": ["m1"], "rel_type": "DIRECTED_BY", "label": "Person", "limit": 5}
    typed = literal_dynamic_names(queries.get("typed_expand"), params)
    assert "-[r:`DIRECTED_BY`]->" in typed.body and "type(r)" not in typed.body  # a typed expand


@pytest.mark.parametrize(
    "code", ["Neo.ClientError.Cluster.NotALeader", "Neo.ClientError.General.ForbiddenOnReadOnlyDatabase"]
)
def test_a_write_to_a_follower_is_not_retried_and_names_the_routing_uri(
    bolt: Bolt, store: Neo4jStore, code: str
) -> None:
    bolt.tx.run.side_effect = server_error(code, "No write operations are allowed on this database.")
    with pytest.raises(StoreError, match="cannot take this write") as info:
        store.write([Statement(queries.get("meta_set_embedding_complete"), {"complete": True})])
    assert not isinstance(info.value, RetryableError) and "neo4j://" in (info.value.hint or "")
    assert bolt.session.execute_write.call_count == 1
