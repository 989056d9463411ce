"""The public Python API: open a graph and ask it questions, retrieve evidence, ingest, train.

What ``kgqa ask``, ``kgqa ingest`` and ``kgqa train`` do, callable from a notebook or a
service. Settings resolve as on the command line (arguments > ``KGQA_<SECTION>__<KEY>``
environment variables > ``./kgqa.toml`` or ``config_file`` > defaults); any config key is an
argument as a section dict, ``answer={"max_answers": 20}``. The library sets no process-wide
state (torch's thread pools, logging) the way the command line does.

Example:
    >>> import kgqa
    >>> kgqa.ingest("examples/metaqa_movies/kb.txt", format="metaqa", data_dir="kgqa-data")
    >>> with kgqa.open(data_dir="kgqa-data") as g:
    ...     print(g.ask("who directed cast away").answers[0].name)
    Robert Zemeckis

This module starts every stage (ingest and training included), as the command line does, so it
may import ``ingest`` and ``retriever_training``; the rest of ``kgqa`` never does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kgqa.config import Settings, load_config
from kgqa.errors import ConfigError

if TYPE_CHECKING:
    from ingest.pipeline import IngestResult
    from kgqa.answer import Answer, EvidenceLine
    from kgqa.pipeline import QuestionAsker
    from kgqa.retrieval.retriever import ScoredTriple
    from kgqa.types import LinkedEntity
    from retriever_training.run import TrainReport

PathLike = str | Path


def settings(
    *,
    data_dir: PathLike | None = None,
    checkpoint: PathLike | None = None,
    config_file: PathLike | None = None,
    sections: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """Resolved settings, as a command resolves them, with these arguments as its flags.

    Args:
        data_dir: ``store.data_dir`` (the embedded store's folder).
        checkpoint: ``retrieval.checkpoint`` (default ``<data_dir>/retriever.pt``).
        config_file: a TOML config file (default ``./kgqa.toml``, else the user config dir).
        sections: any other keys, ``{"retrieval": {"hops": 2}, "store": {"backend": "neo4j"}}``.

    Raises:
        ConfigError: an unknown section or key, or a value of the wrong type, named.
    """
    overrides: dict[str, dict[str, Any]] = {}
    for section, values in (sections or {}).items():
        if not isinstance(values, Mapping):
            raise ConfigError(
                f"argument {section}={values!r} is not a section",
                hint=f"pass settings by section, e.g. {section}={{'key': value}}",
            )
        overrides[section] = dict(values)
    if data_dir is not None:
        overrides.setdefault("store", {})["data_dir"] = Path(data_dir)
    if checkpoint is not None:
        overrides.setdefault("retrieval", {})["checkpoint"] = Path(checkpoint)
    path = None if config_file is None else Path(config_file)
    return load_config(overrides, config_file=path, overrides_source="argument").settings


@dataclass(frozen=True, slots=True)
class Retrieved:
    """What the graph holds for one question, for a reader of your own (an LLM prompt).

    Attributes:
        question: as asked.
        topics: the entities the question was linked to (or the ``topic`` ids given).
        triples: the best scored triples, best first; scores in [0, 1], higher is better.
        evidence: the evidence lines the reader would see (``answer.organisation``: triples,
            chains or paths), weakest first, best last, each with the triples behind it.
        timings_ms: milliseconds per stage.
    """

    question: str
    topics: tuple[LinkedEntity, ...]
    triples: tuple[ScoredTriple, ...]
    evidence: tuple[EvidenceLine, ...]
    timings_ms: dict[str, float] = field(default_factory=dict)

    def context(self) -> str:
        """The evidence lines as one block of text, one line each, best last (prompt order)."""
        return "\n".join(line.text for line in self.evidence)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "topics": [t.to_dict() for t in self.topics],
            "triples": [t.to_dict() for t in self.triples],
            "evidence": [line.to_dict() for line in self.evidence],
            "timings_ms": {stage: round(ms, 3) for stage, ms in self.timings_ms.items()},
        }


def _topic_ids(topic: str | Sequence[str] | None) -> tuple[str, ...]:
    if topic is None:
        return ()
    return (topic,) if isinstance(topic, str) else tuple(topic)


class Graph:
    """A knowledge graph opened for questions: store, retriever and reader loaded once.

    A MoR checkpoint (text-rich typed graphs) answers :meth:`ask` with the same
    :class:`~kgqa.answer.Answer` as a KGQA one; :meth:`retrieve` is for KGQA checkpoints.

    Make one with :func:`open`; close it with :meth:`close` or a ``with`` block. Not
    thread-safe: one question at a time per graph.
    """

    def __init__(self, settings: Settings) -> None:
        from kgqa.pipeline import open_question_asker

        self.settings = settings
        self._stack = ExitStack()
        try:
            self._asker: QuestionAsker | None = self._stack.enter_context(open_question_asker(settings))
        except BaseException:
            self._stack.close()
            raise

    @property
    def model(self) -> str:
        """What answers, in words: nothing trained (train-free), or the checkpoint and its training."""
        from kgqa.pipeline import model_origin

        return model_origin(self.settings)

    def _open_asker(self) -> QuestionAsker:
        if self._asker is None:
            raise ConfigError("this graph is closed", hint="open it again with kgqa.open(...)")
        return self._asker

    def ask(
        self, question: str, topic: str | Sequence[str] | None = None, *, hops: int | None = None
    ) -> Answer:
        """Answer a question with the evidence behind it.

        Args:
            question: as a person types it (names need no brackets or capitals).
            topic: entity id(s) the question is about; ``None`` links them from the text.
            hops: the longest relation path walked (default ``retrieval.hops``); the planner
                chooses the question's own length up to it.

        Returns:
            The :class:`kgqa.answer.Answer`: answers best first (``.name``, ``.id``, ``.score``),
            the evidence lines, the linked topics and per-stage timings.

        Raises:
            EntityNotFoundError: no entity of the graph is named in the question.

        Example:
            >>> g.ask("who directed cast away").answers[0].name
            'Robert Zemeckis'
        """
        return self._open_asker().ask(question, topic_ids=_topic_ids(topic), hops=hops)

    def retrieve(
        self,
        question: str,
        topic: str | Sequence[str] | None = None,
        *,
        hops: int | None = None,
        top_k: int | None = None,
    ) -> Retrieved:
        """Everything before the reader: scored triples and evidence lines for your own LLM.

        Args:
            question, topic, hops: as for :meth:`ask`.
            top_k: how many scored triples to return (default ``retrieval.top_k``, 100).

        Example:
            >>> r = g.retrieve("who directed cast away", top_k=5)
            >>> prompt = f"Facts:\\n{r.context()}\\nQuestion: {r.question}\\nAnswer:"
        """
        from kgqa.pipeline import Asker

        asker = self._open_asker()
        if not isinstance(asker, Asker):
            raise ConfigError(
                f"{self.settings.checkpoint_path} is a MoR checkpoint: its evidence is each answer's "
                "trajectories, not scored triples",
                hint="use g.ask(question).evidence (lines with the relationships they cross)",
            )
        gathered = asker.gather(question, topic_ids=_topic_ids(topic), hops=hops)
        from kgqa.pipeline import evidence_lines

        retrieval, evidence = gathered.retrieval, gathered.evidence
        k = self.settings.retrieval.top_k if top_k is None else top_k
        return Retrieved(
            question=retrieval.question,
            topics=retrieval.topics,
            triples=tuple(retrieval.top(k)),
            evidence=evidence_lines(retrieval, evidence, evidence.items),
            timings_ms=dict(retrieval.timings_ms),
        )

    def close(self) -> None:
        """Close the store (idempotent)."""
        self._asker = None
        self._stack.close()

    def __enter__(self) -> Graph:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open(
    data_dir: PathLike | None = None,
    checkpoint: PathLike | None = None,
    *,
    config_file: PathLike | None = None,
    **sections: Mapping[str, Any],
) -> Graph:
    """Open a knowledge graph for questions.

    With no checkpoint trained (none named, none at ``<data_dir>/retriever.pt``) questions are
    answered train-free, by matching relation names with the question's words
    (:attr:`Graph.model` says which).

    Args:
        data_dir: the embedded store's folder (``store.data_dir``, default ``kgqa-data``).
        checkpoint: a checkpoint from :func:`train` / ``kgqa train``.
        config_file: a TOML config file (default ``./kgqa.toml``).
        **sections: any config key by section, e.g. ``store={"backend": "neo4j"}`` (your own
            Neo4j graph: with its mapping keys, see docs/neo4j.md), ``answer={"max_answers": 20}``,
            ``reader={"kind": "llm", "model": "..."}``.

    Raises:
        KgqaError: no store in ``data_dir``, a server unreachable, a checkpoint that does not
            fit the store, a bad setting; each with a hint.

    Example:
        >>> g = kgqa.open(data_dir="kgqa-data")
        >>> print(g.ask("who directed cast away").answers[0])
    """
    return Graph(
        settings(data_dir=data_dir, checkpoint=checkpoint, config_file=config_file, sections=sections)
    )


def ingest(
    path: PathLike,
    format: str,
    *,
    data_dir: PathLike | None = None,
    edges: PathLike | None = None,
    delimiter: str | None = None,
    header: bool | None = None,
    columns: Mapping[str, str] | None = None,
    force: bool = False,
    progress: bool = False,
    config_file: PathLike | None = None,
    **sections: Mapping[str, Any],
) -> IngestResult:
    """Load a KB file into the graph store, then embed and index it (``kgqa ingest``).

    Resumable and idempotent: a re-run continues after the last committed batch, or writes
    nothing when the file is loaded.

    Args:
        path: the KB file (``.gz`` is read transparently).
        format: ``metaqa`` (head|relation|tail), ``tsv``, ``csv``, ``rog-jsonl``, ``primekg``,
            ``typed-csv`` (with ``edges``).
        edges: ``typed-csv``: the edges CSV.
        delimiter, header, columns: ``tsv``/``csv``: field delimiter, a header line, and its
            mapping, e.g. ``{"head": "subject", "relation": "predicate", "tail": "object"}``.
        force: re-merge a source already loaded completely (writes nothing new).
        progress: progress bars on stderr.
        **sections: any config key by section, e.g. ``ingest={"on_error": "skip"}``.

    Returns:
        The load and embedding report (``.to_dict()``, ``.render()``).

    Example:
        >>> kgqa.ingest("my_kb.tsv", format="tsv", data_dir="my-data").to_dict()["load"]
    """
    from ingest.pipeline import ingest_source

    resolved = settings(data_dir=data_dir, config_file=config_file, sections=sections)
    options = {
        "edges": None if edges is None else Path(edges),
        "delimiter": delimiter,
        "header": header,
        "columns": None if columns is None else dict(columns),
    }
    return ingest_source(
        resolved,
        Path(path),
        format,
        options={k: v for k, v in options.items() if v is not None},
        force=force,
        progress=progress,
    )


def train(
    files: PathLike | Iterable[PathLike] = (),
    format: str | None = None,
    *,
    data_dir: PathLike | None = None,
    out: PathLike | None = None,
    from_graph: bool = False,
    graph_questions: int | None = None,
    limit: int | None = None,
    epochs: int | None = None,
    seed: int | None = None,
    progress: bool = False,
    config_file: PathLike | None = None,
    **sections: Mapping[str, Any],
) -> TrainReport:
    """Train the retriever and extractive reader on question files (``kgqa train``).

    Args:
        files: question files (one path or several); optional with ``from_graph``.
        format: their format: ``metaqa``, ``pathquestion``, ``wc2014`` or ``rog-jsonl``
            (``stark`` trains MoR: ``kgqa train --format stark``).
        out: the checkpoint to write (default ``<data_dir>/retriever.pt``, which :func:`open`
            then uses).
        from_graph: also train the triple scorers on questions generated from the graph (no
            labels needed); the planner and the reader learn from ``files`` only.
        graph_questions: with ``from_graph``, how many to generate (``train.graph_questions``).
        limit: a fixed pseudo-random sample of N training (and N/3 validation) questions per file.
        epochs: most epochs of each model (``train.epochs``, default 8).
        seed: sampling, split and initialisation seed (``train.seed``).
        **sections: any config key by section, e.g. ``retrieval={"hops": 2}``,
            ``train={"planner_kind": "auto"}`` (the ``[train]`` keys: ``kgqa config show``).

    Returns:
        The training report (``.to_dict()``): questions per part, validation metrics, seconds.

    Example:
        >>> kgqa.train("examples/metaqa_movies/questions.txt", format="metaqa", data_dir="kgqa-data")
    """
    from kgqa.store import open_store
    from retriever_training.from_graph import graph_questions_file
    from retriever_training.run import train_configured

    paths = [Path(files)] if isinstance(files, str | Path) else [Path(f) for f in files]
    if paths and format is None:
        raise ConfigError("question files need their format", hint="pass format='metaqa' (or another)")
    if format == "stark":
        raise ConfigError(
            "the Python API does not train MoR yet", hint="run: kgqa train FILES --format stark"
        )
    if not paths and not from_graph:
        raise ConfigError("nothing to train on", hint="pass question files, from_graph=True, or both")
    named = {"graph_questions": graph_questions, "epochs": epochs, "seed": seed}
    train_keys = {**sections.get("train", {}), **{k: v for k, v in named.items() if v is not None}}
    sections = {**sections, "train": train_keys}
    resolved = settings(data_dir=data_dir, checkpoint=out, config_file=config_file, sections=sections)
    t = resolved.train
    sources = [(p, format) for p in paths if format is not None]
    if from_graph:
        with open_store(resolved.store) as store:
            made = graph_questions_file(
                store, resolved.store.data_dir, count=t.graph_questions, seed=t.seed, progress=progress
            )
        sources.append((Path(made.path), "rog-jsonl"))
    return train_configured(resolved, sources, limit=limit, progress=progress)
