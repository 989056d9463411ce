"""The extractive reader: answers read off a retrieval by a trained entity scorer, no LLM involved.

:class:`EntityReader` scores candidate answer entities from the question, the entity's text
embedding, its DDE, pooled scores of the triples incident to it, the relations that lead there,
where the retrieved reasoning paths end and (with a planner) where the likeliest relation paths
end. :class:`ExtractiveReader` runs it on a :class:`~kgqa.retrieval.retriever.Retrieval` and
returns ranked answers with the triples that support them. It sits beside the LLM reader
(:mod:`kgqa.reasoning.llm_reader`); both read the same retrieval.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from kgqa.device import model_device
from kgqa.reasoning.constraints import narrowed_by_words
from kgqa.reasoning.plan_ends import confident_plan_ends, tied_ends
from kgqa.reasoning.recency import latest_or_earliest
from kgqa.retrieval.evidence.path_pooling import hop_distance
from kgqa.retrieval.features import to_batch
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.nn import Checkpointable, MlpConfig, mlp_tail, scatter_max
from kgqa.retrieval.models.path_context import reach_columns
from kgqa.retrieval.models.scorer import ScorerBatch, projected_inputs
from kgqa.retrieval.retriever import Retrieval, ScoredTriple, load_bundle


@dataclass(frozen=True, slots=True)
class ReaderConfig(MlpConfig):
    """Shape of an :class:`EntityReader` (a smaller, deeper MLP by default).

    ``plan_dim`` is the width of the per-entity plan columns the reader takes
    (:func:`kgqa.retrieval.models.plans.plan_reach`, 2), 0 for a reader trained without a planner.

    ``answer_threshold``: the probability from which an entity is an answer, chosen on the
    validation questions for the best mean F1 (:func:`calibrate_threshold`) among the entities
    the reader answers from (a sure plan's ends where there is one), so a question gets its
    whole answer set; ``None`` in checkpoints written before, which return the best
    ``top_n`` at or above :data:`UNCALIBRATED_THRESHOLD`.
    """

    hidden: int = 256
    layers: int = 2
    plan_dim: int = 0
    answer_threshold: float | None = None


#: The probability from which a reader without a calibrated ``answer_threshold`` (a checkpoint
#: written before thresholds were calibrated) answers, among its ``top_n`` best: an even chance.
UNCALIBRATED_THRESHOLD = 0.5

#: Columns of :func:`incident_score_features`.
INCIDENT_FEATURES = ("max_incident", "mean_incident", "max_as_tail", "max_as_head")


def incident_score_features(triple_scores: Tensor, head: Tensor, tail: Tensor, num_nodes: int) -> Tensor:
    """Pool per-triple scores onto entities: how strongly the retriever points at each entity.

    Args:
        triple_scores: [E] triple probabilities in [0, 1].
        head: LongTensor [E] local head ids.
        tail: LongTensor [E] local tail ids.
        num_nodes: N.

    Returns:
        [N, 4] with columns :data:`INCIDENT_FEATURES`: max over the triples incident to the entity
        (either end), their mean (a self-loop counts once), max over triples where it is the tail,
        max over triples where it is the head. Zeros where no such triple exists.
    """
    either = torch.cat([head, tail])
    max_any = scatter_max(torch.cat([triple_scores, triple_scores]), either, num_nodes)
    # The tail end of a self-loop is the same incidence as its head end: weight it 0.
    tail_w = (tail != head).to(triple_scores.dtype)
    zeros = triple_scores.new_zeros(num_nodes)
    total = zeros.index_add(0, either, torch.cat([triple_scores, triple_scores * tail_w]))
    count = zeros.index_add(0, either, torch.cat([torch.ones_like(tail_w), tail_w]))
    mean_any = total / count.clamp(min=1)
    max_tail = scatter_max(triple_scores, tail, num_nodes)
    max_head = scatter_max(triple_scores, head, num_nodes)
    return torch.stack([max_any, mean_any, max_tail, max_head], dim=1)


def incident_relation_context(
    triple_scores: Tensor, batch: ScorerBatch, *, project: Tensor | None = None
) -> Tensor:
    """Score-weighted mean embedding of the relations that point at / leave each entity.

    The answer to "who directed X" is the tail of a high-scoring DIRECTED_BY triple; the incident
    score features alone cannot say which relation that was, so the reader also sees it.

    Args:
        project: [h, 2d] weights, or None. Given, the result is ``context @ project.T`` computed
            from the relations' projections (a mean commutes with a linear map), without the
            [N, 2d] context.

    Returns:
        [N, 2d]: mean over triples where the entity is the tail, then where it is the head, each
        weighted by the triple's score; zeros where no such triple exists. [N, h] with ``project``.
    """
    n, d = batch.num_entities, batch.relation_emb.size(1)
    if project is None:
        rows = [batch.relation_emb, batch.relation_emb]
    else:
        rows = [batch.relation_emb @ w.T for w in project.split(d, dim=1)]  # per end: [R, h]
    parts = []
    for end, relation_rows in zip((batch.tail, batch.head), rows, strict=True):
        weighted = relation_rows[batch.rel] * triple_scores.unsqueeze(1)  # [E, d or h]
        total = weighted.new_zeros(n, weighted.shape[1]).index_add_(0, end, weighted)
        norm = triple_scores.new_zeros(n).index_add_(0, end, triple_scores).clamp(min=1e-6)
        parts.append(total / norm.unsqueeze(1))
    return torch.cat(parts, dim=1) if project is None else parts[0] + parts[1]


#: Columns of :func:`path_features`.
PATH_FEATURES = ("path_reach", "log_path_reach", "max_inward", "max_outward")


def path_features(triple_scores: Tensor, batch: ScorerBatch, topic: Tensor) -> Tensor:
    """[N, 4] with columns :data:`PATH_FEATURES`: where the retrieved reasoning paths end.

    - ``path_reach``: :func:`~kgqa.retrieval.evidence.path_pooling.path_reach`, the best product of
      triple scores along a path from a topic; ``log_path_reach`` its log rescaled to [0, 1],
      which separates the small products of long paths (three hops at 0.3 is 0.027).
    - ``max_inward`` / ``max_outward``: the best score of the entity's triples whose other end is
      nearer to / farther from the topics (hop distance). An answer is where a strong path
      arrives and none goes on; on 3-hop questions the reader otherwise picked the first-hop
      writer or director, reached as strongly as the answer but with the path carrying on.
    """
    n = batch.num_entities
    reach = reach_columns(triple_scores, batch.head, batch.tail, topic, n)
    dist = hop_distance(batch.head, batch.tail, topic, n)
    head_nearer = dist[batch.head] < dist[batch.tail]
    tail_nearer = dist[batch.tail] < dist[batch.head]
    inward = scatter_max(triple_scores[head_nearer], batch.tail[head_nearer], n).maximum(
        scatter_max(triple_scores[tail_nearer], batch.head[tail_nearer], n)
    )
    outward = scatter_max(triple_scores[head_nearer], batch.head[head_nearer], n).maximum(
        scatter_max(triple_scores[tail_nearer], batch.tail[tail_nearer], n)
    )
    return torch.cat([reach, torch.stack([inward, outward], dim=1)], dim=1)


@dataclass(frozen=True, slots=True)
class ReaderFeatures:
    """The columns of the reader's input that hold no weight: fixed for a question once its triple
    scores and plan columns are (:func:`reader_features`).

    Why apart: they cost a Dijkstra, a breadth-first search and a dozen scatters per question,
    and training reads each question once an epoch with the same scores; computed once, an
    epoch of the reader only runs its layers.

    Attributes:
        incident: [N, 4], :func:`incident_score_features`.
        after: [N, 4 + plan_dim], :func:`path_features` then the plan columns (when given).
    """

    incident: Tensor
    after: Tensor

    @staticmethod
    def concat(features: Sequence[ReaderFeatures]) -> ReaderFeatures:
        """The features of several questions, rows stacked as :meth:`ScorerBatch.concat` stacks
        their entities."""
        return ReaderFeatures(
            torch.cat([f.incident for f in features]), torch.cat([f.after for f in features])
        )

    def to(self, device: torch.device | str) -> ReaderFeatures:
        """The same features on ``device``."""
        return ReaderFeatures(self.incident.to(device), self.after.to(device))


def reader_features(
    triple_scores: Tensor, batch: ScorerBatch, topic: Tensor, plans: Tensor | None = None
) -> ReaderFeatures:
    """:class:`ReaderFeatures` of one question (arguments as :meth:`EntityReader.forward`)."""
    incident = incident_score_features(triple_scores, batch.head, batch.tail, batch.num_entities)
    paths = path_features(triple_scores, batch, topic)
    after = paths if plans is None else torch.cat([paths, plans.to(paths.dtype)], dim=1)
    return ReaderFeatures(incident, after)


class EntityReader(Checkpointable):
    """Extractive reader: MLP on ``[q || x_e || dde_e || incident scores || relation context ||
    path features || plan columns]``.

    ``x_e`` is the shared ``no_text`` vector for entities without text; the relation context is
    :func:`incident_relation_context`, the path features :func:`path_features`, the plan columns
    :func:`kgqa.retrieval.models.plans.plan_reach` (only when ``plan_dim > 0``). Train with a
    softmax or BCE loss over the candidate entities against the answer labels.
    """

    KIND = "entity_reader"
    CONFIG = ReaderConfig

    def __init__(self, config: ReaderConfig) -> None:
        super().__init__(config)
        d = config.emb_dim
        self.in_dim = 4 * d + config.dde_dim + len(INCIDENT_FEATURES) + len(PATH_FEATURES) + config.plan_dim
        # Same scale as an L2-normalised text embedding.
        self.no_text = nn.Parameter(torch.randn(d) * d**-0.5)
        self.first = nn.Linear(self.in_dim, config.hidden)
        self.mlp = mlp_tail(config.hidden, layers=config.layers, dropout=config.dropout)

    def forward(
        self, batch: ScorerBatch, triple_scores: Tensor, topic: Tensor, plans: Tensor | None = None
    ) -> Tensor:
        """Logits [N], one per local entity.

        Args:
            batch: the question's subgraph.
            triple_scores: [E] triple probabilities in [0, 1] (e.g. ``sigmoid`` of the
                scorer's logits, usually detached).
            topic: LongTensor [T] local ids of the topic entities.
            plans: [N, plan_dim] plan columns, required exactly when ``config.plan_dim > 0``.
        """
        self.check_plan_columns(plans)
        return self.from_features(batch, triple_scores, reader_features(triple_scores, batch, topic, plans))

    def check_plan_columns(self, plans: Tensor | None) -> None:
        """Raise ValueError unless ``plans`` has the ``config.plan_dim`` columns this reader reads
        (``None`` for none)."""
        width = 0 if plans is None else plans.shape[1]
        if width != self.config.plan_dim:
            raise ValueError(f"this reader takes {self.config.plan_dim} plan columns, got {width}")

    def from_features(self, batch: ScorerBatch, triple_scores: Tensor, features: ReaderFeatures) -> Tensor:
        """Logits [N] from the question's :func:`reader_features` (what :meth:`forward` computes
        first): the layers alone, for training, which computes the features once per question."""
        d, dde = self.config.emb_dim, batch.dde.shape[1]
        w_question, w_entity, w_structure, w_context, w_after = self.first.weight.split(
            [d, d, dde + len(INCIDENT_FEATURES), 2 * d, self.in_dim - 4 * d - dde - len(INCIDENT_FEATURES)],
            dim=1,
        )
        structure = F.linear(torch.cat([batch.dde, features.incident], dim=1), w_structure, self.first.bias)
        entity = projected_inputs(batch.entity_emb, batch.has_text, structure, self.no_text, w_entity)
        # The question is the same for every entity of a question: its share of the first layer
        # is computed once per question instead of on N copies of it. The relation context is a
        # score-weighted mean of relation embeddings, so its share is that mean of the
        # relations' projections: R rows projected instead of N rows of 2d (a MetaQA subgraph
        # has thousands of entities and nine relations).
        question = batch.per_entity(F.linear(batch.question.reshape(-1, d), w_question))
        context = incident_relation_context(triple_scores, batch, project=w_context)
        hidden = entity + context + F.linear(features.after, w_after) + question
        return self.mlp(hidden).squeeze(-1)


@dataclass(frozen=True, slots=True)
class ExtractedAnswer:
    """A candidate answer entity from the extractive reader, with the triples that support it."""

    id: str
    name: str
    score: float
    support: tuple[ScoredTriple, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "score": round(self.score, 6),
            "support": [t.to_dict() for t in self.support],
        }


class ExtractiveReader:
    """Ranks a retrieval's candidate answer entities with a trained :class:`EntityReader`.

    Args:
        model: the trained entity scorer (put in eval mode here).
        tables: the retriever's embedding tables (``Retriever.tables``), which a retrieval's rows
            index.
        plan_answers: answer among the likeliest plan's walk ends where the planner is sure of it
            (:func:`~kgqa.reasoning.plan_ends.confident_plan_ends`) and, with several topics,
            among the ends tied to all of them (:func:`~kgqa.reasoning.plan_ends.tied_ends`;
            ``answer.plan_answers``).
        constraints: answer with the ends of the likeliest plan's kind that the question's
            other words single out, through a nameless mediator or by a category they bear,
            where they single out some, or the other parts of its mediators they alone single out
            (:func:`~kgqa.reasoning.constraints.narrowed_by_words`;
            ``answer.constraints``), and where the question asks for the last or first, those
            of the latest or earliest year they bear
            (:func:`~kgqa.reasoning.recency.latest_or_earliest`).
    """

    def __init__(
        self,
        model: EntityReader,
        tables: tuple[EntityTable, RelationTable],
        *,
        plan_answers: bool = True,
        constraints: bool = True,
    ) -> None:
        self.model = model.eval()
        self.tables = tables
        self.plan_answers = plan_answers
        self.constraints = constraints

    @classmethod
    def from_checkpoint(
        cls,
        path: Path,
        tables: tuple[EntityTable, RelationTable],
        *,
        embedder_model_id: str,
        device: torch.device | str = "cpu",
        plan_answers: bool = True,
        constraints: bool = True,
    ) -> ExtractiveReader:
        """The reader in the checkpoint ``kgqa train`` wrote (the one the retriever loads), on
        ``device``.

        Raises:
            CheckpointError: see :func:`~kgqa.retrieval.retriever.load_bundle` and
                :meth:`EntityReader.from_checkpoint`.
        """
        data = load_bundle(path, embedder_model_id)
        model = EntityReader.from_checkpoint(data["reader"], embedder_model_id=embedder_model_id)
        return cls(model.to(device), tables, plan_answers=plan_answers, constraints=constraints)

    def entity_probabilities(self, retrieval: Retrieval) -> Tensor:
        """FloatTensor [N] in [0, 1]: the reader's probability that each local entity answers the
        question, 0 for entities that may not answer (``Retrieval.answerable``: the topics, unless
        the walk rule lets them answer, and nameless nodes)."""
        return self.entity_probabilities_many([retrieval])[0]

    def entity_probabilities_many(self, retrievals: Sequence[Retrieval]) -> list[Tensor]:
        """:meth:`entity_probabilities` of each retrieval, the reader's layers run once over all
        of them (their subgraphs as one disjoint graph, :meth:`ScorerBatch.concat`); each
        question's features are its own, as in training."""
        device = model_device(self.model)
        with torch.inference_mode():
            batches, scores, features = [], [], []
            for retrieval in retrievals:
                sub = retrieval.prepared.subgraph
                batch = to_batch(retrieval.prepared, self.tables).to(device)
                plans = (
                    None if retrieval.plans is None else retrieval.plans.reach(sub.num_entities).to(device)
                )
                self.model.check_plan_columns(plans)
                probabilities = retrieval.probabilities.to(device)
                batches.append(batch)
                scores.append(probabilities)
                features.append(reader_features(probabilities, batch, sub.topic.to(device), plans))
            logits = self.model.from_features(
                ScorerBatch.concat(batches), torch.cat(scores), ReaderFeatures.concat(features)
            ).cpu()
        counts = [r.prepared.subgraph.num_entities for r in retrievals]
        return [
            torch.sigmoid(question_logits).masked_fill(~retrieval.answerable(), 0.0)
            for question_logits, retrieval in zip(logits.split(counts), retrievals, strict=True)
        ]

    def extract_answers(
        self,
        retrieval: Retrieval,
        *,
        top_n: int = 5,
        support: int = 3,
        candidates: torch.Tensor | None = None,
        probabilities: Tensor | None = None,
    ) -> list[ExtractedAnswer]:
        """Rank the candidate entities with the extractive reader; each with its best incident triples.

        A reader with an ``answer_threshold`` returns every entity at or above it (at least the
        best one, whatever its probability): the question's whole answer set, which ``kgqa eval``
        scores as it is. An older one returns those of the ``top_n`` best at or above
        :data:`UNCALIBRATED_THRESHOLD` (at least the best one).

        With ``plan_answers``: where the question has several topics and a plan's ends are tied
        to all of them (:func:`~kgqa.reasoning.plan_ends.tied_ends`), every end of the likeliest
        such plan, ranked by the reader; else among a confident plan's ends only
        (:func:`~kgqa.reasoning.plan_ends.confident_plan_ends`). With ``constraints``,
        first: where the question's other words single out some ends of the likeliest plan's kind
        (through a nameless mediator or by a category they bear), or other parts of its
        mediators alone, those
        (:func:`~kgqa.reasoning.constraints.narrowed_by_words`).

        Args:
            top_n: without a threshold, at most how many answers; with one, ignored.
            candidates: BoolTensor [N], the entities allowed as answers (e.g. those the evidence
                shows); every entity when ``None``. Topics answer only under the walk rule
            (``Subgraph.candidate_mask``).
            probabilities: :meth:`entity_probabilities` of ``retrieval`` when already computed.
        """
        started = time.perf_counter()
        answerable = retrieval.answerable()
        allowed = answerable if candidates is None else candidates & answerable
        probs = self.entity_probabilities(retrieval) if probabilities is None else probabilities
        narrowed = first = None
        if self.constraints:
            narrowed = narrowed_by_words(retrieval, allowed)
        if narrowed is not None:
            allowed, top_n = narrowed, int(narrowed.sum())
        else:
            tied = None
            if self.plan_answers:
                tied = tied_ends(retrieval, answerable)
                if tied is None:
                    sub = retrieval.prepared.subgraph
                    own = confident_plan_ends(retrieval.plans, allowed)
                    allowed = confident_plan_ends(retrieval.plans, allowed, sub, retrieval.named)
                    first = None if torch.equal(own, allowed) else own
                else:
                    allowed = tied
            threshold = self.model.config.answer_threshold
            if tied is not None:
                top_n = int(tied.sum())
            else:
                cut = UNCALIBRATED_THRESHOLD if threshold is None else threshold
                above = max(1, int((probs.masked_fill(~allowed, -1.0) >= cut).sum()))
                top_n = above if threshold is not None else min(top_n, above)
        answers = ranked_answers(retrieval, probs, allowed, top_n, support=support)
        if first is not None:  # the sure plan's own ends first, its twins' after: Hit@1 as without them
            local = retrieval.prepared.subgraph.local_ids()
            answers.sort(key=lambda answer: not bool(first[local[answer.id]]))  # sort is stable
        if self.constraints:
            answers = latest_or_earliest(retrieval, answers)
        retrieval.timings_ms["read"] = (time.perf_counter() - started) * 1e3
        return answers


def ranked_answers(
    retrieval: Retrieval, probabilities: Tensor, allowed: Tensor, count: int, *, support: int
) -> list[ExtractedAnswer]:
    """The ``count`` allowed entities of highest ``probabilities`` [N], best first (the first
    of equals in the subgraph's order, so the first answer does not depend on ``count``), each
    with its ``support`` best-scored incident triples."""
    sub = retrieval.prepared.subgraph
    order = torch.sort(probabilities.masked_fill(~allowed, -1.0), descending=True, stable=True)
    best = min(count, int(allowed.sum()))
    answers = []
    for entity, prob in zip(order.indices[:best].tolist(), order.values[:best].tolist(), strict=True):
        incident = ((sub.head == entity) | (sub.tail == entity)).nonzero().flatten()
        ranked = incident[torch.argsort(retrieval.scores[incident], descending=True)][:support]
        entity_id = sub.entity_ids[entity]
        answers.append(
            ExtractedAnswer(
                entity_id,
                retrieval.names.get(entity_id, entity_id),
                prob,
                tuple(retrieval.triple(i) for i in ranked.tolist()),
            )
        )
    return answers


#: Thresholds :func:`calibrate_threshold` chooses among.
THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))


def answer_set_f1(probabilities: Tensor, gold: Tensor, threshold: float) -> float:
    """F1 of the answer set a reader with ``threshold`` returns (every entity at or above it, at
    least the best) against the ``gold`` BoolTensor [N]; ``probabilities`` [N] hold -1 where an
    entity may not answer."""
    chosen = probabilities >= threshold
    chosen[int(torch.argmax(probabilities))] = True
    right = int((chosen & gold).sum())
    if right == 0:
        return 0.0
    precision, recall = right / int(chosen.sum()), right / int(gold.sum())
    return 2 * precision * recall / (precision + recall)


def calibrate_threshold(questions: list[tuple[Tensor, Tensor]]) -> float:
    """The :data:`THRESHOLD_GRID` value with the best mean :func:`answer_set_f1` over
    ``questions`` (probabilities, gold) pairs; the lower one on a tie, without questions the even
    chance an uncalibrated reader answers from (:data:`UNCALIBRATED_THRESHOLD`)."""
    if not questions:
        return UNCALIBRATED_THRESHOLD
    mean_f1 = {t: sum(answer_set_f1(p, g, t) for p, g in questions) / len(questions) for t in THRESHOLD_GRID}
    return max(THRESHOLD_GRID, key=lambda t: (mean_f1[t], -t))
