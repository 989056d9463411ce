"""One question's retrieval inputs: its subgraph, DDE and rows into the embedding tables.

``PreparedQuestion`` keeps row indices instead of embedding copies, so thousands of training
questions fit in memory; ``to_batch`` gathers the embeddings when the scorer needs them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch

from kgqa.config import RETRIEVAL_DEFAULTS
from kgqa.retrieval.graph.subgraph import Subgraph, extract_subgraph
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.dde import dde
from kgqa.retrieval.models.scorer import ScorerBatch
from kgqa.store.protocol import GraphStore


@dataclass(frozen=True, slots=True)
class SubgraphSettings:
    """Caps of the candidate subgraph, DDE rounds (see ``extract_subgraph`` and ``dde``) and the
    walk rule the subgraph carries (``Subgraph.topic_walks``: may walks come back through a topic).

    The caps default to the ``retrieval`` settings' defaults (:data:`kgqa.config.RETRIEVAL_DEFAULTS`);
    the walk rule is the checkpoint's (``kgqa train`` decides it), not a setting.
    """

    hops: int = RETRIEVAL_DEFAULTS.hops
    max_triples: int = RETRIEVAL_DEFAULTS.max_triples
    max_degree: int = RETRIEVAL_DEFAULTS.max_degree
    max_per_node: int = RETRIEVAL_DEFAULTS.max_per_node
    forward_rounds: int = 2
    reverse_rounds: int = 2
    topic_walks: bool = False


@dataclass(frozen=True, slots=True)
class WordRuns:
    """A question's word runs (``name_match.QuestionRuns``) as the relation-name match reads them.

    Attributes:
        vectors: FloatTensor [U, K, d], the embeddings of each run's words
            (``name_match.WordVectors``).
        sharing_cues: LongTensor [U], per run, whether it says that the answers share something
            with the topic, alone ("also") or bound to its other words ("same director"):
            ``NameMatchPlanner.sharing_cues``; ``None``: none does.
        chained: BoolTensor [U], per run, whether it is a noun of a possessive chain of two or
            more ("the nation of X 's parent"): ``QuestionRuns.chained``; ``None``: none is.
        kinds: BoolTensor [U], per run, whether it names a class ("what kind of N is X", "...
            also directed which movies"), which words a step only where it names the step's
            relation beyond the step cost: ``QuestionRuns.kinds``; ``None``: none does.
        asks: BoolTensor [U], per run, whether it is "where" or "when" alone, read on a plan's
            last step rather than paying for a step: ``QuestionRuns.asks``; ``None``: none is.
        relation_count: the relation types the step cost is read from
            (``name_match.step_cost``): the most among the subgraphs of the question's topic
            contenders, so that they compete at one cost; ``None``: the subgraph's own.
    """

    vectors: torch.Tensor
    sharing_cues: torch.Tensor | None = None
    chained: torch.Tensor | None = None
    kinds: torch.Tensor | None = None
    asks: torch.Tensor | None = None
    relation_count: int | None = None


@dataclass(frozen=True, slots=True)
class PreparedQuestion:
    """Everything the scorer needs about one question, by reference into the tables.

    Attributes:
        question_views: FloatTensor [V, d], the embeddings of
            :func:`kgqa.retrieval.models.plans.question_views` (the question, the text before and after
            the topic mention, then the relation mentions in walk order); row 0 is the question
            embedding the scorers read.
        subgraph: the candidate subgraph (local ids).
        entity_rows: LongTensor [N] rows of ``EntityTable`` per local entity.
        relation_rows: LongTensor [R] rows of ``RelationTable`` per local relation.
        dde: FloatTensor [N, D].
        hops: the radius the subgraph was pulled with (the question's reasoning depth).
        timings_ms: milliseconds spent in ``extract`` and ``dde``.
        question_tokens: FloatTensor [T, d], the encoder's token states of the question in order,
            for the word-order planner (:mod:`kgqa.retrieval.models.plan_attention`); ``None`` when no
            model reads them.
        run_words: the question's word runs as the relation-name match reads them (the
            train-free planner, and the name prior of a trained one); ``None`` elsewhere.
        answer_noun: FloatTensor [d], the embedding of the noun naming the answers' kind ("what
            country": :func:`kgqa.retrieval.models.answer_type.answer_noun`); ``None`` where the
            question has none or nothing reads it.
        mediators: BoolTensor [2R], the signed steps into nameless nodes
            (:meth:`~kgqa.retrieval.graph.subgraph.Subgraph.mediator_steps`), which the
            relation-name match reads with the step after as one relation; ``None`` where
            nothing reads them.
        answer_kinds: FloatTensor [N], per local entity, how well the kinds the graph's schema
            gives it fit ``answer_noun``
            (:func:`kgqa.retrieval.models.answer_type.entity_kind_fit`, -inf where it has
            none); ``None`` where the question names no kind or nothing reads it.
        tail_kinds: the same for the kinds plain relation names give the entities they point at
            (:func:`kgqa.retrieval.graph.kinds.tail_kind`).
    """

    question_views: torch.Tensor
    subgraph: Subgraph
    entity_rows: torch.Tensor
    relation_rows: torch.Tensor
    dde: torch.Tensor
    hops: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    question_tokens: torch.Tensor | None = None
    run_words: WordRuns | None = None
    answer_noun: torch.Tensor | None = None
    mediators: torch.Tensor | None = None
    answer_kinds: torch.Tensor | None = None
    tail_kinds: torch.Tensor | None = None

    @property
    def question_emb(self) -> torch.Tensor:
        """FloatTensor [d], the embedding of the whole question."""
        return self.question_views[0]


def subgraph_around(store: GraphStore, topic_ids: Sequence[str], settings: SubgraphSettings) -> Subgraph:
    """The subgraph within ``settings``' hops and caps around ``topic_ids``, under its walk rule.

    Reads the store only, so several may run at once on threads (the store's query releases the
    GIL: 1.55x on 2 cores for MetaQA 2-hop subgraphs, docs/decisions.md)."""
    sub = extract_subgraph(
        store,
        topic_ids,
        hops=settings.hops,
        max_triples=settings.max_triples,
        max_degree=settings.max_degree,
        max_per_node=settings.max_per_node,
    )
    return replace(sub, topic_walks=settings.topic_walks)


def prepare(
    store: GraphStore,
    question_views: torch.Tensor,
    topic_ids: Sequence[str],
    tables: tuple[EntityTable, RelationTable],
    settings: SubgraphSettings,
    *,
    question_tokens: torch.Tensor | None = None,
    subgraph: Subgraph | None = None,
) -> PreparedQuestion:
    """Extract the subgraph around ``topic_ids`` (unless ``subgraph`` is it already:
    :func:`subgraph_around`) and compute its DDE and table rows (``question_views``: [V, d] and
    ``question_tokens``: [T, d] or ``None``, see :class:`PreparedQuestion`)."""
    entities, relations = tables
    started = time.perf_counter()
    sub = subgraph_around(store, topic_ids, settings) if subgraph is None else subgraph
    entity_rows = entities.rows(sub.entity_ids)
    relation_rows = relations.rows(sub.relation_types)
    extracted = time.perf_counter()
    encoding = dde(
        sub.edge_index,
        sub.topic,
        sub.num_entities,
        forward_rounds=settings.forward_rounds,
        reverse_rounds=settings.reverse_rounds,
    )
    done = time.perf_counter()
    timings = {"extract": (extracted - started) * 1e3, "dde": (done - extracted) * 1e3}
    return PreparedQuestion(
        question_views, sub, entity_rows, relation_rows, encoding, settings.hops, timings, question_tokens
    )


def to_batch(prepared: PreparedQuestion, tables: tuple[EntityTable, RelationTable]) -> ScorerBatch:
    """Gather the embeddings of one prepared question into a ``ScorerBatch``."""
    entities, relations = tables
    sub = prepared.subgraph
    return ScorerBatch(
        question=prepared.question_emb,
        entity_emb=entities.matrix[prepared.entity_rows],
        has_text=entities.has_text[prepared.entity_rows],
        relation_emb=relations.matrix[prepared.relation_rows],
        head=sub.head,
        rel=sub.rel,
        tail=sub.tail,
        dde=prepared.dde,
    )
