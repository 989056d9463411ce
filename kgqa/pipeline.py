"""Builds the runtime objects a command needs (store, embedder, retriever, asker) and answers questions.

``Asker.ask`` is the whole question path: link -> retrieve -> pool -> organise -> read. It is
split in two halves, ``gather`` (retrieval and evidence, CPU and store bound) and ``read``
(the reader, network or model bound), so batch evaluation can overlap LLM calls.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import torch

from kgqa.answer import Answer, AnswerEntity, AnswerPlan, EvidenceLine, ground
from kgqa.config import AnswerSettings, ReaderSettings, Settings
from kgqa.device import resolve_device
from kgqa.embed import make_embedder
from kgqa.errors import CheckpointError, KgqaError
from kgqa.reasoning.extractive import ExtractiveReader
from kgqa.retrieval.evidence.items import EvidenceItem
from kgqa.retrieval.evidence.organise import ChainGuide, Evidence, organise, uses_plan_chains
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.retriever import (
    SHOWN_PLANS,
    Retrieval,
    RetrievalRequest,
    Retriever,
    checkpoint_name_prior,
)
from kgqa.store import open_store
from kgqa.store.schema import check_query_embedder, ensure_lookup_indexes
from kgqa.threads import batch_threads
from kgqa.types import EmbeddingMeta

if TYPE_CHECKING:
    from kgqa.embed.protocol import Embedder
    from kgqa.reasoning.llm_reader import LLMReader
    from kgqa.reasoning.plan_reader import PlanReader
    from kgqa.retrieval.mor.retriever import MorRetriever
    from kgqa.store.protocol import GraphStore
    from kgqa.types import TokenBudget


def subgraph_settings(settings: Settings) -> SubgraphSettings:
    r = settings.retrieval
    return SubgraphSettings(
        hops=r.hops, max_triples=r.max_triples, max_degree=r.max_degree, max_per_node=r.max_per_node
    )


@contextmanager
def open_query_store(settings: Settings, embedder: Embedder) -> Iterator[GraphStore]:
    """The configured store, ready to be searched with ``embedder``'s query vectors: embedded
    completely with its model, with entity lookup indexes (created if missing, e.g. on a
    database kgqa did not ingest) and, on Neo4j, ONLINE search indexes sized for it. Closes it."""
    meta = EmbeddingMeta(embedder.model_id, embedder.dimension)
    with open_store(settings.store) as store:
        check_query_embedder(store, meta)
        ensure_lookup_indexes(store)
        # Neo4j builds indexes in the background: make sure they are ONLINE and sized for the embedder.
        check_indexes = getattr(store, "check_search_indexes", None)
        if check_indexes is not None:
            check_indexes(meta)
        yield store


@contextmanager
def open_retriever(settings: Settings) -> Iterator[Retriever]:
    """A retriever over the configured store with the configured checkpoint; closes the store."""
    embedder = make_embedder(settings.embedder)
    with open_query_store(settings, embedder) as store:
        if train_free(settings):
            yield Retriever.train_free(
                store,
                embedder,
                subgraph=subgraph_settings(settings),
                answer_type=settings.retrieval.answer_type,
                answer_kind=settings.retrieval.answer_kind,
                tail_kind=settings.retrieval.tail_kind,
            )
            return
        yield Retriever.from_checkpoint(
            store,
            embedder,
            settings.checkpoint_path,
            subgraph=subgraph_settings(settings),
            rescoring=settings.retrieval.rescoring,
            name_prior=settings.retrieval.name_prior,
            answer_type=settings.retrieval.answer_type,
            answer_kind=settings.retrieval.answer_kind,
            tail_kind=settings.retrieval.tail_kind,
            device=resolve_device(settings.runtime.device),
        )


#: Folder of a data dir that holds the questions ``kgqa train --from-graph`` made from the graph.
GRAPH_QUESTIONS_DIR = "from-graph"


def graph_made(path: Path) -> bool:
    """Whether a question file is one ``kgqa train --from-graph`` made (it lies in the data dir's
    :data:`GRAPH_QUESTIONS_DIR`), not one a person labelled."""
    return path.parent.name == GRAPH_QUESTIONS_DIR


def model_origin(settings: Settings) -> str:
    """What answers on this store, in words, for ``kgqa ask``: nothing trained, or a checkpoint
    trained on labelled questions, on questions made from the graph, or on both."""
    if train_free(settings):
        return "none: train-free (relation names matched with the question's words)"
    if is_mor_checkpoint(settings):
        return f"{settings.checkpoint_path}, MoR (typed plans and a trajectory reranker)"
    from kgqa.checkpoint_file import load_checkpoint

    data = load_checkpoint(settings.checkpoint_path)
    sources = [Path(path) for path, _ in data.get("sources", [])]
    made = sum(graph_made(source) for source in sources)
    if sources and made == len(sources):
        return (
            f"{settings.checkpoint_path}, trained on questions made from the graph: triple scorers; "
            "plans and answers by relation names matched with the question's words"
        )
    kinds = (["labelled questions"] if made < len(sources) else []) + (
        ["questions made from the graph"] if made else []
    )
    prior = checkpoint_name_prior(data, settings.retrieval.name_prior)
    answers = (
        "" if data.get("reader") is not None else "; answers: the likeliest plan's ends (no reader trained)"
    )
    return (
        f"{settings.checkpoint_path}, trained on {' and '.join(kinds) or 'unrecorded questions'}; "
        f"relation-name prior {prior:.2f}{answers}"
    )


def train_free(settings: Settings) -> bool:
    """Whether questions are answered with nothing trained: no checkpoint was named and the data
    dir has none yet (a graph nobody labelled; :mod:`kgqa.retrieval.models.name_match`). A checkpoint
    named and missing is an error, not this."""
    return settings.retrieval.checkpoint is None and not settings.checkpoint_path.is_file()


@dataclass(frozen=True, slots=True)
class Gathered:
    """One question's retrieval and organised evidence, ready for a reader.

    ``entity_scores``: the extractive reader's answer probabilities [N] where they were computed
    already (rated with the other questions of a batch, or needed by plan-guided chains), else
    ``None``; ``scores_ms``: this question's share of the batch's reader pass, which the read
    stage's timing counts.
    """

    retrieval: Retrieval
    evidence: Evidence
    entity_scores: torch.Tensor | None = None
    scores_ms: float = 0.0


class Asker:
    """Answers questions with the extractive reader, or with an LLM reader when one is given.

    Args:
        retriever: scores candidate triples.
        answer: pooling, reselection and organisation settings.
        llm: the LLM reader; ``None`` means the extractive reader answers.
        extractive: the extractive reader, needed when ``llm`` is ``None`` and for plan-guided
            chains (``answer.chain_selection = "plans"``), which go to its likeliest answers.
        reader_settings: the context that sizes the default evidence token budget when no LLM
            reader is given (the LLM reader's own otherwise).
    """

    def __init__(
        self,
        retriever: Retriever,
        answer: AnswerSettings,
        llm: LLMReader | None = None,
        *,
        extractive: ExtractiveReader | PlanReader | None = None,
        reader_settings: ReaderSettings | None = None,
    ) -> None:
        self.retriever = retriever
        self.answer = answer
        self.llm = llm
        self.extractive = extractive
        self.reader_settings = reader_settings or ReaderSettings()

    @property
    def reader_name(self) -> str:
        if self.llm is not None:
            return f"llm:{self.llm.client.model_id}"
        if isinstance(self.extractive, ExtractiveReader):
            return "extractive"
        return "plan ends" if self.retriever.trained else "train-free"

    @property
    def store(self) -> GraphStore:
        return self.retriever.store

    def ask(self, question: str, *, topic_ids: Sequence[str] = (), hops: int | None = None) -> Answer:
        """Answer one question (topics are linked unless ``topic_ids`` are given)."""
        return self.read(self.gather(question, topic_ids=topic_ids, hops=hops))

    def gather(self, question: str, *, topic_ids: Sequence[str] = (), hops: int | None = None) -> Gathered:
        """Link, retrieve, pool and organise: everything before the reader.

        Raises:
            KgqaError: the question's topics could not be found.
        """
        (gathered,) = self.gather_many([RetrievalRequest(question, tuple(topic_ids), hops)])
        if isinstance(gathered, KgqaError):
            raise gathered
        return gathered

    def gather_many(
        self, requests: Sequence[RetrievalRequest], *, threads: int = 1, to_read: bool = False
    ) -> list[Gathered | KgqaError]:
        """:meth:`gather` of each request, retrieved together (:meth:`Retriever.retrieve_many`, on
        ``threads`` threads), or the error that stopped it, in order. ``to_read``: the caller
        reads every one (eval), so where the trained extractive reader answers it rates their
        entities in one pass here (``entity_scores``) instead of one question at a time in
        :meth:`read`; a caller that stops before the reader (:meth:`gather`) pays nothing for it."""
        retrievals = self.retriever.retrieve_many(requests, threads=threads)
        retrieved = [r for r in retrievals if not isinstance(r, KgqaError)]
        started = time.perf_counter()
        rated: list[torch.Tensor] = []
        if to_read and self.llm is None and isinstance(self.extractive, ExtractiveReader) and retrieved:
            with batch_threads(threads, len(retrieved)):
                rated = self.extractive.entity_probabilities_many(retrieved)
        share_ms = (time.perf_counter() - started) * 1e3 / max(1, len(retrieved))
        entity_scores = iter(rated)
        gathered: list[Gathered | KgqaError] = []
        for request, retrieval in zip(requests, retrievals, strict=True):
            if isinstance(retrieval, KgqaError):
                gathered.append(retrieval)
                continue
            started = time.perf_counter()
            scores = next(entity_scores, None)
            guide = None
            if uses_plan_chains(retrieval, self.answer):
                if scores is None:
                    scores = self._extractive().entity_probabilities(retrieval)
                guide = ChainGuide(scores, self.evidence_budget(request.question))
            hops = request.hops or self.retriever.subgraph.hops
            evidence = organise(retrieval, self.answer, hops=hops, guide=guide)
            retrieval.timings_ms["organise"] = (time.perf_counter() - started) * 1e3
            gathered.append(Gathered(retrieval, evidence, scores, share_ms if rated else 0.0))
        return gathered

    def evidence_budget(self, question: str) -> TokenBudget:
        """The chains' token budget: ``answer.evidence_tokens``, else what the reader's context leaves.

        Counted by the LLM reader's client, or estimated (chars / 4) for the extractive reader.
        """
        tokens = self.answer.evidence_tokens
        if self.llm is not None:
            return self.llm.evidence_budget(question, form="paths", tokens=tokens)
        from kgqa.reasoning.prompts import evidence_budget
        from kgqa.reasoning.readers.openai_client import estimate_tokens

        return evidence_budget(
            question,
            form="paths",
            count_tokens=estimate_tokens,
            context_tokens=self.reader_settings.context_tokens,
            max_new_tokens=self.reader_settings.max_new_tokens,
            tokens=tokens,
        )

    def _extractive(self) -> ExtractiveReader | PlanReader:
        if self.extractive is None:
            hint = "load the extractive reader of the checkpoint from 'kgqa train'"
            if self.llm is not None:
                hint += " (plan-guided chains go to its answers), or set answer.chain_selection = 'ranked'"
            raise CheckpointError("no extractive reader loaded", hint=hint)
        return self.extractive

    def read(self, gathered: Gathered) -> Answer:
        """Run the reader on gathered evidence (thread-safe for the LLM reader)."""
        retrieval, evidence = gathered.retrieval, gathered.evidence
        timings = dict(retrieval.timings_ms)
        started = time.perf_counter()
        if self.llm is None:
            answer = self._read_extractive(retrieval, evidence, gathered.entity_scores)
        else:
            answer = self._read_llm(retrieval, evidence)
        timings["read"] = (time.perf_counter() - started) * 1e3 + gathered.scores_ms
        plans = shown_plans(retrieval, answer.answers[0].id if answer.answers else None)
        return replace(answer, timings_ms=timings, disambiguation=retrieval.disambiguation, plans=plans)

    def _read_extractive(
        self, retrieval: Retrieval, evidence: Evidence, entity_scores: torch.Tensor | None
    ) -> Answer:
        sub = retrieval.prepared.subgraph
        candidates = torch.zeros(sub.num_entities, dtype=torch.bool)
        candidates[list(evidence.entities())] = True
        extracted = self._extractive().extract_answers(
            retrieval, top_n=self.answer.max_answers, candidates=candidates, probabilities=entity_scores
        )
        answers = tuple(AnswerEntity(a.name, a.id, a.score, True) for a in extracted)
        return Answer(
            question=retrieval.question,
            topics=retrieval.topics,
            answers=answers,
            abstained=not answers,
            evidence=evidence_lines(retrieval, evidence, evidence.items),
            reader=self.reader_name,
        )

    def _read_llm(self, retrieval: Retrieval, evidence: Evidence) -> Answer:
        assert self.llm is not None
        reading = self.llm.read(retrieval.question, evidence.items, form=evidence.form)
        shown = list(reading.items_used)  # the budget may have dropped the weakest lines
        sub = retrieval.prepared.subgraph
        entity_names = {
            sub.entity_ids[e]: retrieval.names.get(sub.entity_ids[e], sub.entity_ids[e])
            for item in shown
            for e in item.entities
        }
        return Answer(
            question=retrieval.question,
            topics=retrieval.topics,
            answers=ground(reading.answers, entity_names),
            abstained=reading.abstained,
            evidence=evidence_lines(retrieval, evidence, shown),
            reader=self.reader_name,
            raw_replies=tuple(reading.raw_replies),
            prompt_tokens=reading.prompt_tokens,
            completion_tokens=reading.completion_tokens,
        )


def evidence_lines(
    retrieval: Retrieval, evidence: Evidence, items: Sequence[EvidenceItem]
) -> tuple[EvidenceLine, ...]:
    """``items`` of ``evidence`` as the answer's evidence lines, each with the triples behind it."""
    return tuple(
        EvidenceLine(
            item.text, item.score, tuple(retrieval.triple(i) for i in evidence.subgraph_triples(item))
        )
        for item in items
    )


def make_llm_reader(settings: Settings) -> LLMReader:
    """The configured LLM reader (backend imported only now)."""
    from kgqa.reasoning.llm_reader import LLMReader
    from kgqa.reasoning.readers import make_llm_client

    return LLMReader(make_llm_client(settings.reader), settings.reader)


class QuestionAsker(Protocol):
    """One question path whatever the checkpoint: :class:`Asker` (KGQA) and
    :class:`kgqa.mor_asker.MorAsker` (MoR) both answer with an :class:`Answer` over ``store``."""

    @property
    def store(self) -> GraphStore: ...

    def ask(self, question: str, *, topic_ids: Sequence[str] = (), hops: int | None = None) -> Answer: ...


#: Which question path :func:`open_question_asker` takes: the checkpoint's kind decides (``auto``).
AskMode = Literal["auto", "kgqa", "mor"]


@contextmanager
def open_question_asker(
    settings: Settings, *, mode: AskMode = "auto", mor_planner: str = "trained"
) -> Iterator[QuestionAsker]:
    """The asker for the configured checkpoint: MoR for a ``kgqa train --format stark`` one
    (or ``mode="mor"``), else KGQA; closes the store.

    Args:
        mode: ``auto`` (the checkpoint's kind), or force one path.
        mor_planner: MoR's planner, ``trained`` or ``llm`` (:func:`open_mor_retriever`).
    """
    if mode == "mor" or (mode == "auto" and is_mor_checkpoint(settings)):
        from kgqa.mor_asker import MorAsker

        with open_mor_retriever(settings, planner=mor_planner) as retriever:
            yield MorAsker(retriever, max_answers=settings.answer.max_answers)
        return
    with open_asker(settings) as asker:
        yield asker


@contextmanager
def open_asker(settings: Settings) -> Iterator[Asker]:
    """An asker over the configured store, checkpoint, evidence settings and reader."""
    llm = make_llm_reader(settings) if settings.reader.kind == "llm" else None
    answer = settings.answer
    plan_chains = answer.organisation == "chains" and answer.chain_selection == "plans"
    with open_retriever(settings) as retriever:
        extractive = open_extractive_reader(settings, retriever) if llm is None or plan_chains else None
        yield Asker(retriever, answer, llm, extractive=extractive, reader_settings=settings.reader)


def open_extractive_reader(settings: Settings, retriever: Retriever) -> ExtractiveReader | PlanReader:
    """The extractive reader of the configured checkpoint, over ``retriever``'s tables, or the
    plans' ends where the name match ranks the plans (``Retriever.plans_by_name``) or the
    checkpoint has no reader (``kgqa train`` on fewer than ``train.reader_min_questions``)."""
    from kgqa.checkpoint_file import load_checkpoint
    from kgqa.reasoning.plan_reader import PlanReader

    if retriever.plans_by_name or load_checkpoint(settings.checkpoint_path).get("reader") is None:
        return PlanReader(retriever.tables[0], constraints=settings.answer.constraints)
    return ExtractiveReader.from_checkpoint(
        settings.checkpoint_path,
        retriever.tables,
        embedder_model_id=retriever.embedder.model_id,
        device=resolve_device(settings.runtime.device),
        plan_answers=settings.answer.plan_answers,
        constraints=settings.answer.constraints,
    )


def shown_plans(retrieval: Retrieval, first_answer: str | None) -> tuple[AnswerPlan, ...]:
    """The plans an answer shows: the likeliest plan with a walk ending at the entity id
    ``first_answer`` (``AnswerPlan.followed``), then the likeliest others, :data:`SHOWN_PLANS`
    in all.

    Why: the likeliest plan is not always the one the answers follow. "which movies did tom hanks
    and meg ryan star in together" ranks their co-stars' plan first, and its answers, the films
    tied to both, are the ends of "<-STARRED_ACTORS" (:func:`~kgqa.reasoning.plan_ends.tied_ends`).
    """
    ranked = retrieval.plans
    if ranked is None:
        return ()
    sub = retrieval.prepared.subgraph
    local = sub.local_ids()
    first = ranked.likeliest_ending_at(local[first_answer]) if first_answer in local else None
    shown = ranked.describe(sub, SHOWN_PLANS, first=first)
    return tuple(
        AnswerPlan(" ".join(p["steps"]), p["probability"], followed=first is not None and i == 0)
        for i, p in enumerate(shown)
    )


def is_mor_checkpoint(settings: Settings) -> bool:
    """Whether the configured checkpoint is a MoR one (``kgqa train --format stark``): ``kgqa
    ask`` then takes the MoR path. False when the file is missing (the KGQA path says so)."""
    from kgqa.checkpoint_file import load_checkpoint
    from kgqa.retrieval.mor.retriever import KIND

    path = settings.checkpoint_path
    return path.is_file() and load_checkpoint(path).get("kind") == KIND


@contextmanager
def open_mor_retriever(settings: Settings, *, planner: str = "trained") -> Iterator[MorRetriever]:
    """A MoR retriever over the configured store with the configured MoR checkpoint; closes the store.

    Args:
        planner: ``trained`` (the checkpoint's) or ``llm`` (the configured reader backend plans;
            the trained planner answers where its reply is no valid plan).
    """
    from kgqa.retrieval.mor.retriever import MorModel, MorRetriever, Planner, TrainedPlanner

    embedder = make_embedder(settings.embedder)
    model = MorModel.load(settings.checkpoint_path, embedder_model_id=embedder.model_id)
    chosen: Planner = TrainedPlanner(model)
    if planner == "llm":
        from kgqa.reasoning.mor_planner import LLMPlanner
        from kgqa.reasoning.readers import make_llm_client

        chosen = LLMPlanner(make_llm_client(settings.reader), model.schema, fallback=chosen)
    with open_query_store(settings, embedder) as store:
        yield MorRetriever(store, embedder, model, planner=chosen)
