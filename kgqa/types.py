"""Records shared across modules: what ingest writes, what the store reports about itself, and
a question as the stages read it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, astuple, dataclass, field
from typing import Any

from kgqa.names import BRACKET

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class EntityRecord:
    """One entity as a reader found it in a source file.

    Attributes:
        id: stable source id (MID, PrimeKG index, MetaQA name); unique in the store.
        name: display name; falls back to ``id`` where the source has none.
        label: optional type label (``Movie``, ``Disease``) added beside ``:Entity``.
        text: optional description for text-rich KBs; embedded together with the name.
        line: position of the record in the source stream (1-based), used to resume.
    """

    id: str
    name: str
    line: int
    label: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class TripleRecord:
    """One (head, relation, tail) fact with the source relation name kept verbatim."""

    head: str
    relation: str
    tail: str
    line: int


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line a reader could not parse; the loader skips or fails on it (``--on-error``)."""

    line: int
    message: str


SourceItem = EntityRecord | TripleRecord | BadLine


@dataclass(frozen=True, slots=True)
class WriteSummary:
    """What a write transaction changed (counts straight from the backend).

    Every counter either backend reports, deletions included, so a destructive write shows what
    it destroyed. Neo4j counts a removed property in ``properties_set``; kglite counts it in
    ``properties_removed`` and reports no label counters.
    """

    nodes_created: int = 0
    relationships_created: int = 0
    properties_set: int = 0
    labels_added: int = 0
    nodes_deleted: int = 0
    relationships_deleted: int = 0
    properties_removed: int = 0
    labels_removed: int = 0
    indexes_added: int = 0
    indexes_removed: int = 0
    constraints_added: int = 0
    constraints_removed: int = 0

    def __add__(self, other: WriteSummary) -> WriteSummary:
        return WriteSummary(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @property
    def total(self) -> int:
        """Number of changes of any kind; 0 means the write was a no-op."""
        return sum(astuple(self))


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """One index as the store reports it; ``options`` holds vector dimension/similarity."""

    name: str
    kind: str
    state: str
    labels: tuple[str, ...]
    properties: tuple[str, ...]
    dimensions: int | None = None
    similarity: str | None = None


@dataclass(frozen=True, slots=True)
class EmbeddingMeta:
    """The embedding model a store was built with (the ``:KgqaMeta`` node)."""

    model_id: str
    dimension: int
    similarity: str = "cosine"


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """What the store is and what it holds, for ``kgqa stats`` and pre-flight checks."""

    backend: str
    location: str
    indexes: tuple[IndexInfo, ...] = ()
    embedding: EmbeddingMeta | None = None
    schema_version: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class LinkedEntity:
    """A store entity matched to a question span.

    Attributes:
        id: ``Entity.id`` in the store.
        name: the entity's name.
        score: confidence in [0, 1], higher is better (comparable across methods: topic and
            bracket = 1.0, exact = 0.95, full-text and vector scaled into (0, 0.9]).
        mention: the question text that matched ("" for explicit topic ids).
        method: how it was found: ``topic``, ``bracket``, ``exact``, ``fuzzy`` (within a typo, a
            demonym or an acronym), ``fulltext`` (a partial name) or ``vector``.
    """

    id: str
    name: str
    score: float
    mention: str
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ParsedQuestion:
    """A question parsed once, for every stage that reads it (the linker, the retriever's
    embedding and planner, question files).

    ``[brackets]`` are the MetaQA convention for naming a topic: the linker takes the spans as
    entity names or ids, and every model reads the text without the bracket characters, as a
    user would type it.

    Attributes:
        asked: the question as given.
        text: without bracket characters, whitespace collapsed: ``"what did [Tom Hanks] do"`` ->
            ``"what did Tom Hanks do"``.
        bracketed: the texts inside brackets, stripped, non-empty, in order (``("Tom Hanks",)``).
    """

    asked: str
    text: str
    bracketed: tuple[str, ...]

    @classmethod
    def parse(cls, question: str) -> ParsedQuestion:
        spans = tuple(s for m in BRACKET.finditer(question) if (s := m.group(1).strip()))
        text = " ".join(BRACKET.sub(lambda m: m.group(1), question).split())
        return cls(question, text, spans)


@dataclass(frozen=True, slots=True)
class QAExample:
    """One question from an evaluation/training file.

    Attributes:
        qid: stable id (file stem + 0-based line number unless the file has ids).
        question: the question text as the user would type it (MetaQA brackets removed).
        topic_ids: gold topic entity ids where the file gives them (MetaQA brackets, PathQuestion
            path heads, RoG ``q_entity``), else empty.
        answers: gold answer entity ids/names (MetaQA and PathQuestion answers are entity ids).
        gold_paths: gold relation paths where the file has them, each a list of
            (head, relation, tail) triples in KB direction order as written in the file.
        line: 0-based line number in the source file (what ``--lines`` filters on).
        qtype: question template/type where known (MetaQA ``qa_*_qtype.txt``), else "".
        relation_paths: the gold relation-name sequences from a topic to the answers where the
            file names them (PathQuestion/WC2014 gold paths, the MetaQA qtype), KB source names
            as in the triple file, e.g. ``("directed_by", "directed_by", "in_language")``.
        metapath: the gold typed plan where the file names it (STaRK-style ``metapath`` column,
            notation of :mod:`kgqa.retrieval.mor.plan`), else "".
        text_constraints: the question spans that describe a node by its text, where the file
            names them (``text_constraint`` column), else ().
    """

    qid: str
    question: str
    topic_ids: tuple[str, ...]
    answers: tuple[str, ...]
    line: int
    gold_paths: tuple[tuple[tuple[str, str, str], ...], ...] = ()
    qtype: str = ""
    relation_paths: tuple[tuple[str, ...], ...] = ()
    metapath: str = ""
    text_constraints: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """What the evidence lines of one prompt may cost (set by the reader, spent by the evidence
    selection, :mod:`kgqa.retrieval.evidence.plan_evidence`).

    Attributes:
        tokens: the most tokens all evidence lines may take together.
        count: tokens one line (or a fragment appended to a line) takes in the reader's prompt.
    """

    tokens: int
    count: Callable[[str], int]
