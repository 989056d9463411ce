"""The embedded default store: kglite, in-process and file-backed, no server.

kglite runs the same Neo4j-dialect kernels as Neo4j. What differs is normalised here, so the rest
of kgqa never sees it:

- vector scores: kglite returns raw cosine in [-1, 1]; Neo4j returns ``(1 + cos) / 2``. Rows from
  kernels that call ``db.index.vector.query*`` get their ``score`` column mapped to Neo4j's scale.
- one writer per file: the file is opened read-only (a snapshot, no lease, nothing saved at
  close) until the first write, which takes the writer lease; a second writer gets
  ``StoreUnavailableError`` naming the holder. Read-only commands thus skip the checkpoint
  that closing a writer costs (~2 s for the MetaQA KB).
- commits newer than the checkpoint (in the ``-wal`` sidecar, left by a killed writer) are
  replayed on open, so every command sees the same state; while a live writer holds the file,
  readers see its last checkpoint and say so in one log line instead of kglite's warning.
- vector indexes are served by exact search in ``kglite_vectors`` (kglite's HNSW index costs
  ~37 s to build for 43k vectors and is rebuilt at every open); a read-only open keeps the
  vectors as one matrix in ``vector-cache/`` beside the graph file for the next process.
- ``vector.similarity.cosine``, which kglite lacks, is computed here on the vectors the rewritten
  kernel returns (kgqa.store.kglite_vectors), on Neo4j's scale.
- kgqa's indexes are found by schema (kgqa.store.index_schema): where a user's index of the
  same type, label and property stands in for an absent kgqa one, kernels query it by its name.
- full-text queries with fuzzy terms (``word~1``), which kglite's full-text index ignores, are
  served by ``kglite_fulltext``.
- kglite prints advisory query warnings ("no node has property 'text'") on stderr; they go to
  this module's debug log instead, since empty optional properties are normal here.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import kglite

from kgqa.errors import MissingIndexError, QueryError, StoreError, StoreUnavailableError
from kgqa.store import kglite_fulltext as fulltext
from kgqa.store import kglite_vectors as vectors
from kgqa.store.index_schema import apply_aliases, index_aliases
from kgqa.store.mapping import GraphMapping
from kgqa.store.protocol import Statement
from kgqa.store.queries import Query
from kgqa.store.schema import list_indexes, read_store_info
from kgqa.types import StoreInfo, WriteSummary

log = logging.getLogger(__name__)

#: The folder beside the graph file where read-only opens keep the vector matrices
#: (kgqa.store.kglite_vectors.MatrixCache); safe to delete.
VECTOR_CACHE = "vector-cache"

_LIST_VECTOR_INDEXES = (
    f"MATCH (i:{vectors.INDEX_NODE}) RETURN i.name AS name, i.label AS label, i.prop AS prop, "
    "i.dimensions AS dimensions, i.similarity AS similarity"
)
_RECORD_VECTOR_INDEX = (
    f"MERGE (i:{vectors.INDEX_NODE} {{name: $name}}) "
    "SET i.label = $label, i.prop = $prop, i.dimensions = $dimensions, i.similarity = $similarity"
)
_DROP_VECTOR_INDEX = f"MATCH (i:{vectors.INDEX_NODE} {{name: $name}}) DELETE i"
_COUNTERS = tuple(f.name for f in fields(WriteSummary))


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
    except OSError as exc:  # kglite reports unreadable files and sidecars as plain OSError
        raise StoreError(
            f"{where}cannot read the graph store: {exc}",
            hint="check the data dir; a corrupt '<graph file>-wal' sidecar can be moved aside, "
            "which discards the commits it holds",
        ) from exc


def _index_params(index: vectors.VectorIndex) -> dict[str, Any]:
    return {
        "name": index.name,
        "label": index.label,
        "prop": index.prop,
        "dimensions": index.dimensions,
        "similarity": index.similarity,
    }


def _summary(stats: Mapping[str, int] | None) -> WriteSummary:
    if not stats:
        return WriteSummary()
    return WriteSummary(**{name: int(stats.get(name, 0)) for name in _COUNTERS})


class KgliteStore:
    """A ``GraphStore`` over one kglite file under the data directory.

    Args:
        path: the ``.kgl`` file; created on first write, parent directories included.
        mapping: the graph's labels and properties (kgqa.store.mapping); every kernel is
            rendered through it.
    """

    backend = "embedded"

    def __init__(self, path: Path, *, mapping: GraphMapping | None = None) -> None:
        self.path = Path(path)
        self.mapping = mapping or GraphMapping()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kglite.set_query_warning_policy("silent")
        self._writer = not self.path.exists()
        stamp = vectors.file_stamp(self.path)
        with map_store_errors():
            opened = kglite.open(str(self.path)) if self._writer else self._open_reader()
        self._graph: kglite.KnowledgeGraph | None = opened
        # A read snapshot of a file nobody wrote while it loaded: its vector matrices may be kept.
        kept = stamp if not self._writer and vectors.file_stamp(self.path) == stamp else None
        cache = vectors.MatrixCache(self.path.parent / VECTOR_CACHE, kept) if kept else None
        self._vectors = vectors.VectorSearch(self._read, cache=cache)
        self._fuzzy: dict[str, fulltext.FuzzyNameIndex] = {}
        self._index_aliases: dict[str, str] | None = None  # read at the first index query

    def _open_reader(self) -> kglite.KnowledgeGraph:
        """The read snapshot, or the writer handle when the log holds commits the snapshot lacks.

        kglite's ``load`` serves the checkpoint only and warns (a plain ``UserWarning``) when the
        write-ahead log holds newer commits. With no live writer those are a killed writer's
        work: opening as writer replays them. With a live one the snapshot is all there is.
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            snapshot = kglite.load(str(self.path))
        for warning in caught:
            if warning.category is not UserWarning:
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        if not any(w.category is UserWarning for w in caught):
            return snapshot
        try:
            writer = kglite.open(str(self.path))
        except kglite.WriterLeaseHeldError as exc:
            holder = getattr(exc, "holder", {}) or {}
            log.warning(
                "%s is being written by pid %s; reading its last checkpoint, without that "
                "process's newer writes",
                self.path,
                holder.get("pid"),
            )
            return snapshot
        self._writer = True
        return writer

    def _ensure_writer(self) -> None:
        """Swap the read snapshot for the writer handle (lease + write-ahead log) on first write."""
        if not self._writer:
            with map_store_errors():
                writer = kglite.open(str(self.path))
            self._graph, self._writer = writer, True

    @property
    def graph(self) -> kglite.KnowledgeGraph:
        if self._graph is None:
            raise StoreError(f"store {self.path} is closed")
        return self._graph

    def _prepare(self, query: Query, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
        """The kernel as this graph runs it (mapped; a user's equivalent index in place of an
        absent kgqa one) and its checked parameters."""
        given = dict(params or {})
        query.check_params(given)
        text = self.mapping.render(query).body
        if "queryNodes" in text:
            if self._index_aliases is None:
                self._index_aliases = index_aliases(list_indexes(self), self.mapping)
            text = apply_aliases(text, self._index_aliases)
        return text, given

    def _read(self, text: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        result: Any = self.graph.cypher(text, params=params)  # a ResultView without to_df/explain
        rows = result.to_list()
        for warning in result.warnings:
            log.debug("%s", warning)
        return rows

    def _vector_indexes(self) -> dict[str, vectors.VectorIndex]:
        rows = self._read(_LIST_VECTOR_INDEXES, {})
        return {r["name"]: vectors.VectorIndex(**r) for r in rows}

    def run(self, query: Query, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        text, values = self._prepare(query, params)
        with map_store_errors(query):
            swapped = vectors.swap_call_for_hits(text, vectors.QUERY_NODES)
            if swapped is not None:
                text, call = swapped
                values = self._with_vector_hits(query, values, call)
            swapped = vectors.swap_call_for_hits(text, fulltext.QUERY_NODES)
            if swapped is not None and fulltext.is_fuzzy(str(values.get(swapped[1].group("query"), ""))):
                text, call = swapped
                values = self._with_fuzzy_hits(query, values, call)
            similarity = vectors.swap_similarity(text)
            if similarity is not None:
                text, call = similarity
                rows = self._with_similarity(query, self._read(text, values), values, call)
            else:
                rows = self._read(text, values)
            if re.match(r"\s*SHOW\s+INDEXES", text, re.I):
                rows += [
                    {k: v for k, v in idx.show_row().items() if k in query.returns}
                    for idx in self._vector_indexes().values()
                ]
        return rows

    def _with_vector_hits(self, query: Query, values: dict[str, Any], call: re.Match[str]) -> dict[str, Any]:
        """``values`` with the vector call's parameters swapped for its hits (``$__hits``)."""
        name, k_param, vec_param = call.group("name", "k", "vec")
        index = self._vector_indexes().get(name)
        if index is None:
            raise MissingIndexError(
                f"{query.path}: no vector index named '{name}' in {self.path}",
                hint="run 'kgqa embed' (or 'kgqa ingest' without --no-embed) to embed and index the store",
            )
        try:
            hits = self._vectors.top_k(index, values.pop(vec_param), int(values.pop(k_param)))
        except ValueError as exc:
            raise QueryError(f"{query.path}: {exc}", query=query.name) from exc
        return {**values, "__hits": hits}

    def _with_similarity(
        self, query: Query, rows: list[dict[str, Any]], values: dict[str, Any], call: re.Match[str]
    ) -> list[dict[str, Any]]:
        """``rows`` with the vectors in the similarity call's column replaced by their scores."""
        alias = call.group("alias")
        try:
            scores = vectors.cosine_scores([r[alias] for r in rows], values[call.group("vec")])
        except ValueError as exc:
            raise QueryError(f"{query.path}: {exc}", query=query.name) from exc
        return [{**row, alias: score} for row, score in zip(rows, scores, strict=True)]

    def _with_fuzzy_hits(self, query: Query, values: dict[str, Any], call: re.Match[str]) -> dict[str, Any]:
        """``values`` with the full-text call's parameters swapped for its fuzzy hits."""
        name, query_param, limit_param = call.group("name", "query", "limit")
        if name not in self._fuzzy:
            rows = self._read(
                "SHOW INDEXES YIELD name, type, labelsOrTypes WHERE name = $name AND type = 'FULLTEXT' "
                "RETURN labelsOrTypes",
                {"name": name},
            )
            if not rows:
                raise MissingIndexError(
                    f"{query.path}: no full-text index named '{name}' in {self.path}",
                    hint="run 'kgqa ingest' on this store to create its indexes",
                )
            self._fuzzy[name] = fulltext.FuzzyNameIndex(
                self._read, rows[0]["labelsOrTypes"][0], norm_property=self.mapping.name_norm_property
            )
        hits = self._fuzzy[name].search(str(values.pop(query_param)), int(values.pop(limit_param)))
        return {**values, "__hits": hits}

    def write(self, statements: Sequence[Statement]) -> list[WriteSummary]:
        self._ensure_writer()
        self._vectors.invalidate()
        self._fuzzy.clear()
        self._index_aliases = None  # a write may create or drop an index
        prepared = [(st.query, *self._prepare(st.query, st.params)) for st in statements]
        if len(prepared) == 1:  # one statement is atomic on its own; schema DDL must run this way
            query, text, values = prepared[0]
            with map_store_errors(query):
                return [self._write_one(self.graph, text, values)]
        summaries = []
        with map_store_errors(), self.graph.begin() as tx:
            for query, text, values in prepared:
                with map_store_errors(query):
                    summaries.append(self._write_one(tx, text, values))
        return summaries

    def _write_one(self, target: Any, text: str, values: dict[str, Any]) -> WriteSummary:
        """Run one write on the graph or a transaction, recording vector-index DDL ourselves."""
        index = vectors.parse_create(text, values)
        if index is not None:
            return _summary(target.cypher(_RECORD_VECTOR_INDEX, params=_index_params(index)).stats)
        dropped = vectors.parse_drop(text)
        if dropped is not None and dropped in self._vector_indexes():
            target.cypher(_DROP_VECTOR_INDEX, params={"name": dropped})
            return WriteSummary()
        return _summary(target.cypher(text, params=values).stats)

    def info(self) -> StoreInfo:
        return read_store_info(self, backend=self.backend, location=str(self.path))

    def close(self) -> None:
        if self._graph is not None and self._writer:
            with map_store_errors(), warnings.catch_warnings():
                # "parts without a mapped form": only matters for mapped loads, which we never use
                warnings.simplefilter("ignore", kglite.MappedFallbackWarning)
                self._graph.close()
        self._graph = None

    def __enter__(self) -> KgliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
