"""Training examples: a prepared question plus its weak triple labels and answer entities."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from kgqa.embed.protocol import Embedder
from kgqa.errors import ConfigError
from kgqa.retrieval.features import PreparedQuestion, SubgraphSettings, prepare, subgraph_around
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.labels import answer_mask, weak_labels
from kgqa.retrieval.models.plans import QUESTION_VIEWS, question_views
from kgqa.store.protocol import GraphStore
from kgqa.threads import map_on_threads, torch_threads
from kgqa.types import QAExample

log = logging.getLogger(__name__)

EMBED_CHUNK = 256


@dataclass(frozen=True, slots=True)
class TrainingExample:
    """One question ready for training.

    Attributes:
        example: the source question.
        prepared: subgraph, DDE and table rows.
        labels: FloatTensor [E], 1 for triples on the question's reasoning paths (``weak_labels``).
        answers: BoolTensor [N], True for local entities that are gold answers (never topics).

    ``prepared.question_tokens`` holds the question's token states when built ``with_tokens``.
    """

    example: QAExample
    prepared: PreparedQuestion
    labels: torch.Tensor
    answers: torch.Tensor


def build_examples(
    store: GraphStore,
    embedder: Embedder,
    questions: Sequence[QAExample],
    tables: tuple[EntityTable, RelationTable],
    settings: SubgraphSettings,
    *,
    on_progress: Callable[[int], None] | None = None,
    with_tokens: bool = False,
    gold_paths: bool = True,
    embed_threads: int | None = None,
) -> list[TrainingExample]:
    """Prepare questions with their gold topics; questions whose topics are absent are skipped.

    ``gold_paths=False`` drops the relation paths the file names (``--no-gold-paths``): labels and
    planner then fall back to shortest paths, as for a file that names none. It changes the
    labels, so it belongs to whatever identifies a prepared training set.

    Each question is embedded with its planner views (:func:`~kgqa.retrieval.models.plans.question_views`,
    the topic found by name in the text) and, ``with_tokens``, its token states for the
    word-order planner (the embedder must have ``embed_tokens``). ``embed_threads``: torch threads
    for those embeddings, hundreds of questions per call (bulk work, :func:`~kgqa.threads.torch_threads`),
    and threads for the questions' subgraph queries, which run beside each other; None keeps the
    process's. The rest of a question's preparation is small operations, which a second thread
    slows.
    """
    examples: list[TrainingExample] = []
    names = tables[0].names
    untopical: list[str] = []  # qids of questions that name no topic
    absent: list[str] = []  # qids of questions whose topics have no triples in the store
    for start in range(0, len(questions), EMBED_CHUNK):
        chunk = questions[start : start + EMBED_CHUNK]
        tables[0].rows([t for q in chunk for t in q.topic_ids])  # fetches the topics' names
        texts = [question_views(q.question, [names.get(t, t) for t in q.topic_ids]) for q in chunk]
        tokens: list[torch.Tensor | None] = [None] * len(chunk)
        with torch_threads(embed_threads or torch.get_num_threads()):
            vectors = embedder.embed([text for views in texts for text in views]).reshape(
                len(chunk), QUESTION_VIEWS, -1
            )
            if with_tokens:
                tokens = list(embedder.embed_tokens([q.question for q in chunk]))  # type: ignore[attr-defined]
        subgraphs = _subgraphs(store, chunk, settings, embed_threads or torch.get_num_threads())
        tables[0].rows([e for sub in subgraphs if sub is not None for e in sub.entity_ids])  # one fetch
        for qa, vector, states, sub in zip(chunk, vectors, tokens, subgraphs, strict=True):
            if not gold_paths:
                qa = replace(qa, relation_paths=())
            if sub is None:
                log.debug("%s: no topic entity given; skipped", qa.qid)
                untopical.append(qa.qid)
                continue
            prepared = prepare(
                store, vector, qa.topic_ids, tables, settings, question_tokens=states, subgraph=sub
            )
            sub = prepared.subgraph
            if sub.num_triples == 0:
                log.debug("%s: topic %s not in the store; skipped", qa.qid, qa.topic_ids)
                absent.append(qa.qid)
                continue
            labels = weak_labels(sub, qa)
            examples.append(TrainingExample(qa, prepared, labels, answer_mask(prepared, qa.answers)))
        if on_progress:
            on_progress(len(chunk))
    if untopical or absent:
        log.warning(
            "%d of %d questions skipped: %s (first: %s; --debug lists each)",
            len(untopical) + len(absent),
            len(questions),
            _skip_reasons(len(untopical), len(absent)),
            ", ".join((untopical + absent)[:3]),
        )
    return examples


def _subgraphs(
    store: GraphStore, questions: Sequence[QAExample], settings: SubgraphSettings, threads: int
) -> list[Subgraph | None]:
    """Each question's subgraph (None without a topic), on ``threads`` threads: the store's
    queries run beside each other (:func:`~kgqa.retrieval.features.subgraph_around`)."""

    def around(question: QAExample) -> Subgraph | None:
        return subgraph_around(store, question.topic_ids, settings) if question.topic_ids else None

    return map_on_threads(around, questions, threads, name="kgqa-subgraph")


def no_examples_error(questions: Sequence[QAExample], *, part: str) -> ConfigError:
    """The error for a ``part`` ("training") of ``questions`` none of which could be prepared, with
    how many lacked a topic and how many had topics without triples in the store."""
    untopical = sum(not q.topic_ids for q in questions)
    reasons = (
        f"of {len(questions)}, {_skip_reasons(untopical, len(questions) - untopical)}"
        if questions
        else "the files hold none for it"
    )
    return ConfigError(
        f"no {part} question could be prepared: {reasons}",
        hint="check that --data-dir (store.path) holds the graph the questions were written for, "
        "that the questions mark their topic entities, and --hops",
    )


def _skip_reasons(untopical: int, absent: int) -> str:
    reasons = []
    if untopical:
        reasons.append(f"{untopical} name no topic entity")
    if absent:
        reasons.append(f"{absent} have topics not in the store (no triple around them)")
    return ", ".join(reasons)
