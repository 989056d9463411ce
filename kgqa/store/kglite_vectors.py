"""Vector indexes for the embedded store, served by exact search instead of kglite's HNSW.

Why: kglite builds an HNSW graph for every ``CREATE VECTOR INDEX`` and rebuilds it each time the
graph file is opened, which costs tens of seconds at every ``kgqa`` start on a full KB, while an
exact cosine scan of the same vectors as one matrix product takes milliseconds
(docs/decisions.md). So on kglite:

- ``CREATE VECTOR INDEX name FOR (n:Label) ON (n.prop) OPTIONS ...`` records the index as a
  ``(:KgqaVectorIndex)`` node (name, label, property, dimensions, similarity) instead;
- ``DROP INDEX name`` of such an index deletes that node;
- ``CALL db.index.vector.queryNodes('name', $k, $vector) YIELD node, score`` is rewritten to
  ``UNWIND $__hits ... MATCH (node) WHERE elementId(node) = ...``, with the hits computed here
  from a matrix of the label's vectors, so the rest of the kernel (its WHERE, RETURN, LIMIT)
  still runs unchanged in kglite, and scores come back on Neo4j's scale (1 + cos) / 2;
- ``SHOW INDEXES`` rows gain these indexes, so ``kgqa stats`` shows them like Neo4j's;
- ``vector.similarity.cosine(e.prop, $vector) AS score`` (kglite has no vector functions) returns
  the vector instead, and the adapter scores the rows with ``cosine_scores``.

The matrix is loaded on the first vector query and dropped on any write. Reading it through
Cypher costs seconds on a full KB (2.6 s for MetaQA's 43k vectors, most of a one-question
``kgqa ask``), so a read-only store keeps it in ``vector-cache/`` beside the graph file
(:class:`MatrixCache`, float32 as built, keyed by the graph file's size and modification time):
the next process loads it in milliseconds, and any write to the graph makes it stale.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kgqa.atomic_write import atomic_write
from kgqa.store.mapping import quote

log = logging.getLogger(__name__)

CREATE_VECTOR = re.compile(
    r"^\s*CREATE\s+VECTOR\s+INDEX\s+(?P<name>\w+)(?:\s+IF\s+NOT\s+EXISTS)?\s+"
    r"FOR\s+\(\s*(?P<var>\w+)\s*:\s*(?P<label>\w+|`(?:[^`]|``)+`)\s*\)\s+"
    r"ON\s+\(?\s*(?P=var)\.(?P<prop>\w+|`(?:[^`]|``)+`)\s*\)?\s*"
    r"OPTIONS\s*\{\s*indexConfig\s*:\s*\{(?P<config>.*)\}\s*\}\s*$",
    re.S | re.I,
)
DROP_INDEX = re.compile(r"^\s*DROP\s+INDEX\s+(?P<name>\w+)(?:\s+IF\s+EXISTS)?\s*$", re.I)
QUERY_NODES = re.compile(
    r"CALL\s+db\.index\.vector\.queryNodes\(\s*'(?P<name>\w+)'\s*,\s*\$(?P<k>\w+)\s*,\s*\$(?P<vec>\w+)\s*\)"
    r"\s*YIELD\s+node\s*,\s*score",
    re.I,
)
SIMILARITY = re.compile(
    r"vector\.similarity\.cosine\(\s*(?P<expr>\w+\.(?:\w+|`(?:[^`]|``)+`))\s*,\s*\$(?P<vec>\w+)\s*\)"
    r"\s+AS\s+(?P<alias>\w+)",
    re.I,
)
_CONFIG_ENTRY = re.compile(r"`([\w.]+)`\s*:\s*(\$\w+|'[^']*'|[\d.]+)")

INDEX_NODE = "KgqaVectorIndex"


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """A vector index as recorded on the embedded store."""

    name: str
    label: str
    prop: str
    dimensions: int
    similarity: str

    def show_row(self) -> dict[str, Any]:
        """The row Neo4j's ``SHOW INDEXES YIELD ...`` gives for it."""
        return {
            "name": self.name,
            "type": "VECTOR",
            "state": "ONLINE",
            "labelsOrTypes": [self.label],
            "properties": [self.prop],
            "options": {
                "indexConfig": {
                    "vector.dimensions": self.dimensions,
                    "vector.similarity_function": self.similarity.upper(),
                }
            },
        }


def parse_create(text: str, params: Mapping[str, Any]) -> VectorIndex | None:
    """The index a ``CREATE VECTOR INDEX`` statement declares, or None for any other statement."""
    match = CREATE_VECTOR.match(text)
    if match is None:
        return None
    config: dict[str, Any] = {}
    for key, raw in _CONFIG_ENTRY.findall(match.group("config")):
        value: Any = params[raw[1:]] if raw.startswith("$") else raw.strip("'")
        config[key] = value
    return VectorIndex(
        name=match.group("name"),
        label=_unquote(match.group("label")),
        prop=_unquote(match.group("prop")),
        dimensions=int(config["vector.dimensions"]),
        similarity=str(config.get("vector.similarity_function", "cosine")).lower(),
    )


def _unquote(name: str) -> str:
    """A Cypher name as written (plain or backtick-quoted, kgqa.store.mapping) -> the name."""
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def parse_drop(text: str) -> str | None:
    """The index name of a ``DROP INDEX`` statement, or None for any other statement."""
    match = DROP_INDEX.match(text)
    return match.group("name") if match else None


def file_stamp(graph_file: Path) -> str | None:
    """The size and modification time of a kglite file and its write-ahead log: changed by any
    write; None where the file is absent."""
    graph = _size_and_time(graph_file)
    if graph is None:
        return None
    return f"{graph}/{_size_and_time(graph_file.with_name(graph_file.name + '-wal')) or '-'}"


def _size_and_time(path: Path) -> str | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return f"{stat.st_size}:{stat.st_mtime_ns}"


@dataclass(frozen=True, slots=True)
class MatrixCache:
    """Index matrices saved in ``folder`` for the graph state ``stamp`` (:func:`file_stamp`).

    A file holds one index's element ids and unit vectors with the stamp and the index's
    definition; one whose stamp or definition differs, or that does not load, is ignored and
    rewritten. Saving is atomic and best effort: a read-only or full disk costs the next process
    the slow read, nothing else. The ids are saved as one string, a line each (kglite's element
    ids are numbers): torch's weights-only loader takes 0.35 s for MetaQA's 43k ids as a list,
    0.04 s for the file with them joined. The stamp is saved as ``graph_state`` (``stamp`` in the
    files of before, which held a list): each kind of file is stale to the other's reader.
    """

    folder: Path
    stamp: str

    def _file(self, index: VectorIndex) -> Path:
        return self.folder / f"{index.name}.pt"

    def load(self, index: VectorIndex) -> tuple[list[str], torch.Tensor] | None:
        """The saved ids and matrix of ``index`` for this stamp, or None."""
        try:
            data = torch.load(self._file(index), weights_only=True)
        except FileNotFoundError:
            return None
        except Exception as exc:  # a damaged or foreign file: rebuilt and replaced
            log.debug("ignoring %s: %s", self._file(index), exc)
            return None
        if not isinstance(data, dict):
            return None
        if (data.get("graph_state"), data.get("index")) != (self.stamp, asdict(index)):
            return None
        return data["eids"].split("\n") if data["eids"] else [], data["matrix"]

    def save(self, index: VectorIndex, eids: list[str], matrix: torch.Tensor) -> None:
        """Save ``index``'s ids and matrix for this stamp (best effort)."""
        try:
            with atomic_write(self._file(index)) as handle:
                joined = "\n".join(eids)
                saved = {"graph_state": self.stamp, "index": asdict(index), "eids": joined, "matrix": matrix}
                torch.save(saved, handle)
        except OSError as exc:
            log.debug("could not save %s: %s", self._file(index), exc)


class VectorSearch:
    """Exact top-k search over one label's vectors, loaded lazily through ``read``.

    Args:
        read: runs a read statement with params on the graph and returns its rows.
        cache: where the matrices of this graph state are kept between processes; None to read
            them from the graph every time (a writer, a new file).
    """

    def __init__(
        self, read: Callable[[str, dict[str, Any]], list[dict[str, Any]]], *, cache: MatrixCache | None = None
    ) -> None:
        self._read = read
        self._cache = cache
        self._matrices: dict[str, tuple[list[str], torch.Tensor]] = {}

    def invalidate(self) -> None:
        """Forget the matrices, and the cache: after a write the graph is no longer the state the
        cache was keyed to."""
        self._matrices.clear()
        self._cache = None

    def _matrix(self, index: VectorIndex) -> tuple[list[str], torch.Tensor]:
        if index.name not in self._matrices:
            cached = self._cache.load(index) if self._cache is not None else None
            if cached is None:
                cached = self._read_matrix(index)
                if self._cache is not None:
                    self._cache.save(index, *cached)
            self._matrices[index.name] = cached
        return self._matrices[index.name]

    def _read_matrix(self, index: VectorIndex) -> tuple[list[str], torch.Tensor]:
        """``index``'s element ids and vectors (unit length for cosine) read from the graph."""
        rows = self._read(
            f"MATCH (n:{quote(index.label)}) WHERE n.{quote(index.prop)} IS NOT NULL "
            f"RETURN elementId(n) AS eid, n.{quote(index.prop)} AS v",
            {},
        )
        rows = [r for r in rows if r["v"] is not None and len(r["v"]) == index.dimensions]
        # numpy first: torch.tensor of 43k Python lists takes 1.4 s, numpy 0.3 s.
        values = np.asarray([r["v"] for r in rows], dtype=np.float32).reshape(-1, index.dimensions)
        matrix = torch.from_numpy(values)
        if index.similarity == "cosine":
            matrix = torch.nn.functional.normalize(matrix, dim=-1)
        return [r["eid"] for r in rows], matrix

    def top_k(self, index: VectorIndex, vector: list[float], k: int) -> list[dict[str, Any]]:
        """Hits ``{eid, score}``, best first; score is Neo4j's: (1 + cos) / 2, or 1 / (1 + d^2)."""
        eids, matrix = self._matrix(index)
        if not eids or k <= 0:
            return []
        query = torch.tensor(vector, dtype=torch.float32)
        if query.numel() != index.dimensions:
            raise ValueError(
                f"query vector has {query.numel()} dims but index '{index.name}' has {index.dimensions}"
            )
        if index.similarity == "cosine":
            scores = (1.0 + matrix @ torch.nn.functional.normalize(query, dim=0)) / 2.0
        else:
            scores = 1.0 / (1.0 + ((matrix - query) ** 2).sum(dim=1))
        best = torch.topk(scores, min(k, len(eids)))
        return [
            {"eid": eids[i], "score": s}
            for i, s in zip(best.indices.tolist(), best.values.tolist(), strict=True)
        ]


def swap_call_for_hits(text: str, call: re.Pattern[str]) -> tuple[str, re.Match[str]] | None:
    """Replace a procedure ``call ... YIELD node, score`` in ``text`` by an UNWIND over the
    ``$__hits`` parameter (``{eid, score}`` rows computed in process), so the rest of the kernel
    runs unchanged; None when the text has no such call."""
    match = call.search(text)
    if match is None:
        return None
    replacement = (
        "UNWIND $__hits AS __hit MATCH (node) WHERE elementId(node) = __hit.eid "
        "WITH node, __hit.score AS score"
    )
    return text[: match.start()] + replacement + text[match.end() :], match


def swap_similarity(text: str) -> tuple[str, re.Match[str]] | None:
    """Replace ``vector.similarity.cosine(x.prop, $param) AS alias`` in ``text`` by
    ``x.prop AS alias``, for ``cosine_scores`` to score the returned vectors; None when the text
    has no such call."""
    match = SIMILARITY.search(text)
    if match is None:
        return None
    replacement = f"{match.group('expr')} AS {match.group('alias')}"
    return text[: match.start()] + replacement + text[match.end() :], match


def cosine_scores(vectors: list[list[float] | None], query: list[float]) -> list[float | None]:
    """Neo4j's ``vector.similarity.cosine(v, query)`` of each vector: (1 + cos) / 2 in [0, 1];
    None for a missing or all-zero vector (neither has a cosine).

    Raises:
        ValueError: a vector's dimension differs from the query's (Neo4j refuses those too).
    """
    q = torch.tensor(query, dtype=torch.float32)
    present = [i for i, v in enumerate(vectors) if v is not None]
    wrong = next((len(vectors[i] or ()) for i in present if len(vectors[i] or ()) != q.numel()), None)
    if wrong is not None:
        raise ValueError(f"vector.similarity.cosine: a vector of {wrong} dims against a query of {q.numel()}")
    scores: list[float | None] = [None] * len(vectors)
    if not present or not bool(q.any()):
        return scores
    matrix = torch.tensor([vectors[i] for i in present], dtype=torch.float32)
    norms = matrix.norm(dim=1)
    cos = (matrix @ q) / (norms * q.norm()).clamp(min=1e-12)
    for i, c, n in zip(present, cos.tolist(), norms.tolist(), strict=True):
        scores[i] = (1.0 + c) / 2.0 if n > 0 else None
    return scores
