"""The embedded default store: kglite, in-process and file-backed, no server.

kglite runs the same Neo4j-dialect kernels as Neo4j. What differs is normalised here, so the rest
of kgqa never sees it:

- vector scores: kglite returns raw cosine in [-1, 1]; Neo4j returns ``(1 + cos) / 2``. Rows from
  kernels that call ``db.index.vector.query*`` get their ``score`` column mapped to Neo4j's scale.
- ``OPTIONS {indexConfig: ...}`` must hold literals in kglite; the validated parameter values are
  inlined there (and only there) before the statement runs.
- one writer per file: a second process gets ``StoreUnavailableError`` naming the holder.
- kglite prints advisory query warnings ("no node has property 'text'") on stderr; they go to
  this module's debug log instead, since empty optional properties are normal here.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import kglite

from kgqa.errors import QueryError, StoreError, StoreUnavailableError
from kgqa.store.protocol import Statement
from kgqa.store.queries import Query
from kgqa.store.schema import read_store_info
from kgqa.types import StoreInfo, WriteSummary

log = logging.getLogger(__name__)

_OPTIONS_BLOCK = re.compile(r"OPTIONS\s*\{.*\}", re.S)
_SAFE_OPTION_STRING = re.compile(r"^[A-Za-z0-9_.-]+$")


def _inline_option_params(text: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Replace ``$name`` inside an OPTIONS map by its literal value (kglite needs literals there)."""
    match = _OPTIONS_BLOCK.search(text)
    if match is None:
        return text, dict(params)
    remaining = dict(params)

    def literal(m: re.Match[str]) -> str:
        value = remaining.pop(m.group(1))
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise QueryError(f"index option ${m.group(1)} must be a number or a word, got {value!r}")
        if isinstance(value, str):
            if not _SAFE_OPTION_STRING.match(value):
                raise QueryError(f"index option ${m.group(1)}={value!r} is not a plain word")
            return f"'{value}'"
        return repr(value)

    block = re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", literal, match.group(0))
    return text[: match.start()] + block + text[match.end() :], remaining


@contextlib.contextmanager
def map_store_errors(query: Query | None = None) -> Iterator[None]:
    """Translate kglite exceptions into kgqa's, by class and ``.code``, never by message."""
    where = f"{query.path}: " if query else ""
    try:
        yield
    except kglite.WriterLeaseHeldError as exc:
        holder = getattr(exc, "holder", {}) or {}
        raise StoreUnavailableError(
            f"{where}the graph file is open for writing by pid {holder.get('pid')}",
            hint="wait for that process (an ingest?) to finish, or point KGQA_DATA_DIR elsewhere",
        ) from exc
    except kglite.CypherSyntaxError as exc:
        raise QueryError(
            f"{where}Cypher syntax error: {exc}",
            query=query.name if query else None,
            line=getattr(exc, "line", None),
            col=getattr(exc, "col", None),
        ) from exc
    except kglite.CypherError as exc:
        raise QueryError(f"{where}{exc}", query=query.name if query else None) from exc
    except kglite.KgError as exc:
        raise StoreError(f"{where}kglite error ({getattr(exc, 'code', None)}): {exc}") from exc


def _summary(stats: Mapping[str, int] | None) -> WriteSummary:
    if not stats:
        return WriteSummary()
    return WriteSummary(
        nodes_created=stats.get("nodes_created", 0),
        relationships_created=stats.get("relationships_created", 0),
        properties_set=stats.get("properties_set", 0),
        labels_added=stats.get("labels_added", 0),
    )


class KgliteStore:
    """A ``GraphStore`` over one kglite file under the data directory.

    Args:
        path: the ``.kgl`` file; created on first write, parent directories included.
    """

    backend = "embedded"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kglite.set_query_warning_policy("silent")
        with map_store_errors():
            self._graph: kglite.KnowledgeGraph | None = kglite.open(str(self.path))

    @property
    def graph(self) -> kglite.KnowledgeGraph:
        if self._graph is None:
            raise StoreError(f"store {self.path} is closed")
        return self._graph

    def _prepare(self, query: Query, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
        given = dict(params or {})
        query.check_params(given)
        return _inline_option_params(query.body, given)

    def run(self, query: Query, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        text, values = self._prepare(query, params)
        with map_store_errors(query):
            result = self.graph.cypher(text, params=values)
            rows = result.to_list()
        for warning in result.warnings:
            log.debug("%s: %s", query.name, warning)
        if "db.index.vector.query" in text:
            for row in rows:
                if row.get("score") is not None:
                    row["score"] = (1.0 + float(row["score"])) / 2.0
        return rows

    def write(self, statements: Sequence[Statement]) -> list[WriteSummary]:
        prepared = [(st.query, *self._prepare(st.query, st.params)) for st in statements]
        if len(prepared) == 1:  # one statement is atomic on its own; schema DDL must run this way
            query, text, values = prepared[0]
            with map_store_errors(query):
                return [_summary(self.graph.cypher(text, params=values).stats)]
        summaries = []
        with map_store_errors(), self.graph.begin() as tx:
            for query, text, values in prepared:
                with map_store_errors(query):
                    summaries.append(_summary(tx.cypher(text, params=values).stats))
        return summaries

    def info(self) -> StoreInfo:
        return read_store_info(self, backend=self.backend, location=str(self.path))

    def close(self) -> None:
        if self._graph is not None:
            with map_store_errors(), warnings.catch_warnings():
                # "parts without a mapped form": only matters for mapped loads, which we never use
                warnings.simplefilter("ignore", kglite.MappedFallbackWarning)
                self._graph.close()
            self._graph = None

    def __enter__(self) -> KgliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

