"""The MoR retriever: plan, mixed traversal, rerank; and its checkpoint.

One checkpoint file (``kind: "mor"``) holds everything a question needs besides the store: the
store schema the planner was trained on, the learnt span cues, the plan scorer, the node types
its training questions described (:class:`PlanFit`) and, once trained, the trajectory reranker.
``kgqa ask`` tells a MoR checkpoint from a KGQA one by this ``kind``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

from kgqa.checkpoint_file import load_checkpoint
from kgqa.embed.protocol import Embedder
from kgqa.errors import CheckpointError, EntityNotFoundError
from kgqa.link import link
from kgqa.retrieval.models.nn import FORMAT_VERSION
from kgqa.retrieval.mor.plan import Metapath, Schema, enumerate_plans
from kgqa.retrieval.mor.planner import Cues, MetapathScorer
from kgqa.retrieval.mor.reranker import TrajectoryReranker, features, heuristic_scores, plan_mixture
from kgqa.retrieval.mor.traversal import (
    Anchors,
    Candidate,
    Trajectory,
    TraversalSettings,
    Traverser,
    alias_match,
    content_words,
    node_types,
)
from kgqa.store.protocol import GraphStore
from kgqa.types import LinkedEntity

KIND = "mor"
#: Trajectories kept per answer as its evidence.
EVIDENCE_TRAJECTORIES = 3
#: Full-text matches of the question outside its description tried per named node (beside the linker's).
SYNONYM_K = 20
#: Plans executed besides the likeliest one: those at least this share of its probability ...
PLAN_RATIO = 0.1
#: ... and at most this many plans in all.
MAX_PLANS = 3
#: Content words (outside the linked mentions and the frame words) from which a question no cue
#: opens a description for still describes a node: "a finding marked by upturning of the big toe".
#: On a development sample of HPO's training questions (never trained on by a zero-label model),
#: 3 to 8 gave the same plans.
DESCRIPTION_WORDS = 4


@dataclass(slots=True)
class MorModel:
    """The trained parts of MoR (see the module docstring); ``described_types``: the node types
    the training questions described, None in checkpoints written before it was kept (then any
    type may be described)."""

    schema: Schema
    cues: Cues
    planner: MetapathScorer
    reranker: TrajectoryReranker | None
    embedder_model_id: str
    described_types: frozenset[str] | None = None
    plans: list[Metapath] = field(init=False)
    plan_matrix: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.plans = enumerate_plans(self.schema)
        self.plan_matrix = self.planner.encode(self.plans)

    def checkpoint(self) -> dict[str, Any]:
        """A dict for ``torch.save`` that :meth:`load` reads back (``weights_only`` safe)."""
        return {
            "format_version": FORMAT_VERSION,
            "kind": KIND,
            "embedder_model_id": self.embedder_model_id,
            "schema": sorted(list(t) for t in self.schema.triples),
            "cues": {
                "left": dict(self.cues.left),
                "right": dict(self.cues.right),
                "frame": sorted(self.cues.frame),
            },
            "planner": self.planner.checkpoint(embedder_model_id=self.embedder_model_id),
            "reranker": (
                self.reranker.checkpoint(embedder_model_id=self.embedder_model_id) if self.reranker else None
            ),
            "described_types": None if self.described_types is None else sorted(self.described_types),
        }

    @classmethod
    def load(
        cls, source: str | os.PathLike[str] | Mapping[str, Any], *, embedder_model_id: str | None = None
    ) -> MorModel:
        """Read a MoR checkpoint (a path or the loaded dict).

        Raises:
            CheckpointError: missing file, another kind or version, or another embedder.
        """
        ckpt = source if isinstance(source, Mapping) else load_checkpoint(Path(source))
        if ckpt.get("kind") != KIND or ckpt.get("format_version") != FORMAT_VERSION:
            where = "the checkpoint" if isinstance(source, Mapping) else f"checkpoint {source}"
            raise CheckpointError(
                f"{where} is not a MoR checkpoint "
                f"(kind {ckpt.get('kind')!r}, version {ckpt.get('format_version')!r})",
                hint="train one with 'kgqa train FILE --format stark'",
            )
        if embedder_model_id is not None and ckpt["embedder_model_id"] != embedder_model_id:
            raise CheckpointError(
                f"the MoR checkpoint was trained on embedder {ckpt['embedder_model_id']!r}, "
                f"the configured one is {embedder_model_id!r}",
                hint="set embedder.model to the checkpoint's embedder or re-train",
            )
        reranker = ckpt.get("reranker")
        described = ckpt.get("described_types")
        return cls(
            schema=Schema(frozenset(tuple(t) for t in ckpt["schema"])),
            cues=Cues(
                left=dict(ckpt["cues"]["left"]),
                right=dict(ckpt["cues"]["right"]),
                frame=frozenset(ckpt["cues"].get("frame", ())),
            ),
            planner=MetapathScorer.from_checkpoint(ckpt["planner"]),
            reranker=TrajectoryReranker.from_checkpoint(reranker) if reranker else None,
            embedder_model_id=str(ckpt["embedder_model_id"]),
            described_types=None if described is None else frozenset(described),
        )


@dataclass(frozen=True, slots=True)
class RankedNode:
    """One answer: a node of the plan's answer type.

    Attributes:
        score: reranker logit (or the untrained ranking's score); higher is better, comparable
            within one question only.
        trajectories: its best trajectories (evidence), best first.
    """

    id: str
    name: str
    type: str
    score: float
    trajectories: tuple[Trajectory, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "score": round(self.score, 4),
            "trajectories": [
                {
                    "nodes": list(t.nodes),
                    "rel_types": list(t.rel_types),
                    "rel_eids": list(t.rels),
                    "score": t.score,
                }
                for t in self.trajectories
            ],
        }


@dataclass(frozen=True, slots=True)
class QuestionReading:
    """What the planner reads besides the question's embedding.

    Attributes:
        span: the description (the whole question when no cue introduces one).
        linked: the linker's candidates outside the span, best first.
        topic_types: the type of the best candidate of each mention.
        types: entity id -> type, for ``linked``.
        vector: the question's embedding [d].
        describes: whether the question describes a node: a cue opened ``span``, or, with no
            cue, :data:`DESCRIPTION_WORDS` or more content words stand outside the linked
            mentions and the frame words (a description worded as no training question worded
            one: "a finding marked by upturning of the big toe").
    """

    span: str
    linked: tuple[LinkedEntity, ...]
    topic_types: tuple[str, ...]
    types: dict[str, str]
    vector: torch.Tensor
    describes: bool = False


@dataclass(frozen=True, slots=True)
class PlanRun:
    """One executed plan: the planner's probability of it, its weight among the question's plans
    (see :meth:`MorRetriever.candidates`), the anchors it was given and the candidates (of its
    answer type) it found."""

    plan: Metapath
    prob: float
    weight: float
    anchors: Anchors
    candidates: list[Candidate]


@dataclass(frozen=True, slots=True)
class MorResult:
    """MoR's answer to one question: ranked nodes, the heaviest plan run (``plan``, its
    probability ``plan_prob``, ``anchors``), every plan run with its probability (``plans``,
    heaviest first), timings in ms."""

    nodes: tuple[RankedNode, ...]
    plan: Metapath
    plan_prob: float
    anchors: Anchors
    plans: tuple[tuple[Metapath, float], ...]
    timings_ms: dict[str, float]


@runtime_checkable
class Planner(Protocol):
    """Chooses a question's plans: the trained :class:`TrainedPlanner` (default) or the LLM
    planner (:class:`kgqa.reasoning.mor_planner.LLMPlanner`)."""

    def plans(self, question: str, reading: QuestionReading) -> list[tuple[Metapath, float]]:
        """The plans worth executing for ``question`` (valid in the store's schema), best first,
        each with its probability in [0, 1]; at least one."""
        ...


class TrainedPlanner:
    """The plan scorer of a :class:`MorModel`: the likeliest of the schema's enumerated plans that
    fit the question's reading (:class:`PlanFit`), and the runners-up within a margin of it.

    Args:
        ratio: a runner-up is kept when its probability is at least ``ratio`` times the best's
            and it asks for the same answer type (answers of one type: the type is what the
            question is surest about, "which diseases ...").
        max_plans: plans returned at most.

    The answer type is chosen first, as the likeliest plan's whatever the reading, and the plans
    that fit the reading are then ranked within it: a described answer ("the phenotype described
    as ... of gene G") must not take the type from "which diseases of G show a feature marked by
    ..." only because its plan is the likeliest that fits. (The probability summed over each
    type's plans chose as well on HPO, but a type with many more plans wins it by their number.)

    Why several: the scorer's second plan is often the right one when it hesitates ("diseases
    of gene G with a phenotype described as ..." read as the 2-hop "diseases with a phenotype of
    G described as ..."); executing it and letting :meth:`MorRetriever.rank` weigh the plans by
    probability recovers those answers without changing the ranking when the scorer is sure.
    """

    def __init__(self, model: MorModel, *, ratio: float = PLAN_RATIO, max_plans: int = MAX_PLANS) -> None:
        self.model = model
        self.ratio = ratio
        self.max_plans = max_plans
        self.fit = PlanFit(model.plans, model.described_types)
        types = sorted({p.answer.type for p in model.plans})
        self.answer_type = torch.tensor([types.index(p.answer.type) for p in model.plans])

    def plans(self, question: str, reading: QuestionReading) -> list[tuple[Metapath, float]]:
        scorer = self.model.planner
        with torch.no_grad():
            linked = scorer.linked_types(reading.topic_types)[None]
            logits = scorer(reading.vector[None], linked, self.model.plan_matrix)[0]
        fits = self.fit.mask(reading)
        for keep in (fits & (self.answer_type == self.answer_type[int(logits.argmax())]), fits):
            if bool(keep.any()):
                logits = logits.masked_fill(~keep, float("-inf"))
                break
        probs = torch.softmax(logits, 0)
        top = torch.topk(probs, min(self.max_plans, len(self.model.plans)))
        best, answer = float(top.values[0]), self.model.plans[int(top.indices[0])].answer.type
        return [
            (self.model.plans[i], p)
            for p, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)
            if p >= self.ratio * best and self.model.plans[i].answer.type == answer
        ]


class PlanFit:
    """Which plans use what a question gives, as far as its reading can tell: one described node
    where the question describes one (:attr:`QuestionReading.describes`) and none where it does
    not, each of a type training questions described (``described_types``; any type where None),
    and a named node where the linker found a topic.

    Why: a planner trained on questions made from the graph scores real questions' plans by the
    parts they share with the made ones, and so drops an anchor ("genes of disease D" for "genes
    of D with a finding marked by ...") or describes a node whose type has no text worth
    matching ("diseases described as ..." where diseases carry only their names); a plan that
    leaves out what the question says, or asks for a description no node of its type has, is no
    reading of it. Read once per plan here, so a question costs a few tensor comparisons.
    """

    def __init__(self, plans: Sequence[Metapath], described_types: frozenset[str] | None) -> None:
        described = [p.described() for p in plans]
        self.described = torch.tensor([len(d) for d in described])
        self.describable = torch.tensor(
            [described_types is None or set(d) <= described_types for d in described]
        )
        self.named = torch.tensor(
            [any(n.restriction == "name" for c in p.chains for n in c.nodes[1:]) for p in plans]
        )

    def mask(self, reading: QuestionReading) -> torch.Tensor:
        """BoolTensor [P]: the plans that fit ``reading``."""
        fits = (self.described == int(reading.describes)) & self.describable
        return fits & self.named if reading.topic_types else fits


class MorRetriever:
    """Answers questions over a text-rich typed graph with a trained :class:`MorModel`.

    Args:
        store: the graph store the model's schema came from.
        embedder: the store's embedding model.
        model: the trained planner (and reranker).
        settings: traversal caps.
        planner: who plans (:class:`Planner`); default the model's trained planner.
    """

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        model: MorModel,
        settings: TraversalSettings | None = None,
        planner: Planner | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.model = model
        self.traverser = Traverser(store, embedder, settings or TraversalSettings())
        self.planner = planner or TrainedPlanner(model)

    def read(self, question: str) -> QuestionReading:
        """The description span (learnt cues), the entities named outside it (the linker), and
        the embeddings of the question and the span (one batch).

        The linker reads the whole question; a mention inside the span is part of the
        description and dropped. A span that opens with "both" coordinates two findings ("both
        <name> and <description>"), which one description cannot: it is cut at the "and" after
        the linker's mention there (or at its first "and"), and the longer conjunct kept as the
        description (names are short), so the other is read as a name.
        """
        span = self.model.cues.span(question) or question
        try:
            linked = link(self.store, self.embedder, question)
            found, topics = linked.candidates, linked.topics
        except EntityNotFoundError:
            found, topics = (), ()
        if span != question:
            start = question.find(span)
            span = _uncoordinated(span, [c.mention for c in found if c.mention])
            start = question.find(span, start)
            kept = []
            for cand in found:
                at = question.find(cand.mention) if cand.mention else -1
                if at < start or at >= start + len(span):
                    kept.append(cand)
            found, topics = tuple(kept), tuple(t for t in topics if t in kept)
        types = node_types(self.store, [c.id for c in found])
        with torch.no_grad():
            vectors = self.embedder.embed([question, span])
        self.traverser.remember({question: vectors[0], span: vectors[1]})
        return QuestionReading(
            span,
            tuple(found),
            tuple(types.get(t.id, "") for t in topics),
            types,
            vectors[0],
            describes=span != question or self._unnamed_words(question, found) >= DESCRIPTION_WORDS,
        )

    def _unnamed_words(self, question: str, found: Sequence[LinkedEntity]) -> int:
        """How many content words of ``question`` stand outside the mentions of ``found`` and
        are no frame words (:attr:`Cues.frame`)."""
        rest = question
        for cand in found:
            if cand.mention:
                rest = rest.replace(cand.mention, " ")
        return len(self.model.cues.unframed(rest).split())

    def anchors(self, question: str, plan: Metapath, reading: QuestionReading) -> Anchors:
        """The question's spans and the candidates for ``plan``'s named nodes.

        A named node's candidates are the linker's entities of its type and the nodes of its type
        whose text best matches the question outside the description, less its frame words
        (full-text; :attr:`Cues.frame`), ranked by
        :func:`~kgqa.retrieval.mor.traversal.alias_match` (the share of an alias's words the
        question holds, then how many words that is, then the link score); the traversal starts
        from the first ``name_k`` of them. Questions name phenotypes by synonyms too, which a
        node keeps in its text, not its name, so the linker alone picks partial name matches
        over them; and a one-word segment of a long text ("The lactate") must lose to a whole
        three-word synonym ("Increased lactate in body"). A name the linker found within a typo,
        a demonym or an acronym (method ``fuzzy``) counts as held: "reeep2" names REEP2 as fully
        as "REEP2" does.
        """
        outside = question.replace(reading.span, " ") if reading.span != question else question
        names: dict[tuple[int, int], list[tuple[str, float]]] = {}
        named = 1.0
        for c, chain in enumerate(plan.chains):
            end = chain.nodes[-1]
            if end.restriction != "name":
                continue
            of_type = [e for e in reading.linked if reading.types.get(e.id) == end.type]
            linked = {e.id: e.score for e in of_type}
            misspelt = {e.id for e in of_type if e.method == "fuzzy"}
            searched = self.model.cues.unframed(outside)
            ids = [*linked, *(h["id"] for h in self.traverser.fulltext(searched, end.type, SYNONYM_K))]
            rows = self.traverser.node_texts(ids)
            scored = [
                (i, *alias_match(said, rows[i]["name"], rows[i]["text"]), linked.get(i, 0.0))
                for i in dict.fromkeys(ids)
                if i in rows
                for said in [f"{outside} {rows[i]['name']}" if i in misspelt else outside]
            ]
            scored.sort(key=lambda t: (-t[1], -t[2], -t[3], t[0]))
            names[(c, len(chain.nodes) - 1)] = [(i, score) for i, score, _, _ in scored]
            named *= max((share for _, share, _, _ in scored), default=0.0)
        spans = {(0, 0): reading.span} if plan.answer.restriction == "text" else {}
        for c, chain in enumerate(plan.chains):
            for i, node in enumerate(chain.nodes[1:], start=1):
                if node.restriction == "text":
                    spans[(c, i)] = reading.span
        return Anchors(spans=spans, names=names, question=question, named=named)

    def candidates(
        self, question: str, *, structural: bool = True, textual: bool = True, text_matching: bool = True
    ) -> tuple[list[PlanRun], dict[str, float]]:
        """Plan, link and traverse: one :class:`PlanRun` per plan worth running, heaviest first,
        with its unranked candidates; and the timings.

        A plan's weight is the planner's probability times how well the question names its
        named nodes (``Anchors.named``): a plan whose named node matches nothing in the question
        ("genes of <X>" where no gene is named) is no reading of it. Plans of weight 0 are not
        run unless every plan has weight 0; then the probabilities are the weights.
        """
        timings: dict[str, float] = {}
        started = time.perf_counter()
        reading = self.read(question)
        timings["link"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        planned = [
            (plan, prob, self.anchors(question, plan, reading))
            for plan, prob in self.planner.plans(question, reading)
        ]
        weighted = [(plan, prob, prob * anchors.named, anchors) for plan, prob, anchors in planned]
        if not any(w > 0 for _, _, w, _ in weighted):
            weighted = [(plan, prob, prob, anchors) for plan, prob, _, anchors in weighted]
        weighted = sorted((p for p in weighted if p[2] > 0), key=lambda p: -p[2])
        timings["plan"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        runs = [
            PlanRun(
                plan,
                prob,
                weight,
                anchors,
                self.traverser.run(
                    plan, anchors, structural=structural, textual=textual, text_matching=text_matching
                ),
            )
            for plan, prob, weight, anchors in weighted
        ]
        timings["traverse"] = (time.perf_counter() - started) * 1000
        return runs, timings

    def rank(self, runs: Sequence[PlanRun], *, rerank: bool = True) -> list[tuple[Candidate, float, PlanRun]]:
        """Candidates of all runs with their scores, best first (ties by id), each with the run
        whose evidence it shows.

        Each run's candidates are scored by the reranker (where the model has one and ``rerank``
        is on, else :func:`heuristic_scores`), turned into a distribution over that run's
        candidates, and the runs' distributions mixed with the plans' weights
        (:func:`~kgqa.retrieval.mor.reranker.plan_mixture`): a node's score is the log of its
        probability under the mixture. With one plan that is the reranker's order.
        """
        scored = []
        for run in runs:
            if not run.candidates:
                continue
            x = features(run.candidates, chains=len(run.plan.chains), plan_prob=run.prob)
            with torch.no_grad():
                scores = (
                    self.model.reranker(x)
                    if rerank and self.model.reranker is not None
                    else heuristic_scores(x)
                )
            scored.append(([c.id for c in run.candidates], scores, run.weight))
        mixture = plan_mixture(scored)
        best: dict[str, tuple[Candidate, PlanRun]] = {}
        for run in runs:  # evidence from the likeliest plan that reached the node
            for cand in run.candidates:
                best.setdefault(cand.id, (cand, run))
        ranked = [(best[i][0], score, best[i][1]) for i, score in mixture.items()]
        return sorted(ranked, key=lambda p: (-p[1], p[0].id))

    def retrieve(
        self,
        question: str,
        *,
        top_k: int = 20,
        structural: bool = True,
        textual: bool = True,
        text_matching: bool = True,
        rerank: bool = True,
    ) -> MorResult:
        """The ``top_k`` answer nodes for ``question``, best first, with their evidence."""
        runs, timings = self.candidates(
            question, structural=structural, textual=textual, text_matching=text_matching
        )
        started = time.perf_counter()
        ranked = self.rank(runs, rerank=rerank)[:top_k]
        names = self.traverser.node_texts([c.id for c, _, _ in ranked])
        timings["rerank"] = (time.perf_counter() - started) * 1000
        nodes = tuple(
            RankedNode(
                c.id,
                names[c.id]["name"] if c.id in names else c.id,
                run.plan.answer.type,
                score,
                tuple(sorted(c.trajectories, key=lambda t: -t.score)[:EVIDENCE_TRAJECTORIES]),
            )
            for c, score, run in ranked
        )
        top = runs[0]
        return MorResult(
            nodes, top.plan, top.prob, top.anchors, tuple((r.plan, r.prob) for r in runs), timings
        )


def _uncoordinated(span: str, mentions: Sequence[str]) -> str:
    """``span`` without a leading coordination (see :meth:`MorRetriever.read`): after a linked
    mention that opens it and is followed by "and", the rest; else, when it opens with "both",
    the longer of the part before its first " and " and the part after it."""
    body = span[len("both ") :] if span.lower().startswith("both ") else span
    for mention in mentions:
        if body.lower().startswith(mention.lower()):
            rest = body[len(mention) :].strip()
            if rest.lower().startswith("and ") and rest[len("and ") :].strip():
                return rest[len("and ") :].strip()
    if body == span:
        return span
    cut = body.lower().find(" and ")
    if cut < 0 or not body[cut + len(" and ") :].strip():
        return span
    first, rest = body[:cut].strip(), body[cut + len(" and ") :].strip()
    return first if len(content_words(first)) > len(content_words(rest)) else rest
