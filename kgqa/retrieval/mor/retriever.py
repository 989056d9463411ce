"""The MoR retriever: plan, mixed traversal, rerank; and its checkpoint.

One checkpoint file (``kind: "mor"``) holds everything a question needs besides the store: the
store schema the planner was trained on, the learnt span cues, the plan scorer and, once
trained, the trajectory reranker. ``kgqa ask`` tells a MoR checkpoint from a KGQA one by this
``kind``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

from kgqa.embed.protocol import Embedder
from kgqa.errors import CheckpointError, EntityNotFoundError
from kgqa.link import link
from kgqa.retrieval.mor.plan import Metapath, Schema, enumerate_plans
from kgqa.retrieval.mor.planner import Cues, MetapathScorer
from kgqa.retrieval.mor.reranker import TrajectoryReranker, features, heuristic_scores
from kgqa.retrieval.mor.traversal import (
    Anchors,
    Candidate,
    Trajectory,
    TraversalSettings,
    Traverser,
    alias_match,
    node_types,
)
from kgqa.retrieval.nn import FORMAT_VERSION
from kgqa.store.protocol import GraphStore
from kgqa.types import LinkedEntity

KIND = "mor"
#: Trajectories kept per answer as its evidence.
EVIDENCE_TRAJECTORIES = 3
#: Full-text matches of the question outside its description tried per named node (beside the linker's).
SYNONYM_K = 5


@dataclass(slots=True)
class MorModel:
    """The trained parts of MoR (see the module docstring)."""

    schema: Schema
    cues: Cues
    planner: MetapathScorer
    reranker: TrajectoryReranker | None
    embedder_model_id: str
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
            "cues": {"left": dict(self.cues.left), "right": dict(self.cues.right)},
            "planner": self.planner.checkpoint(embedder_model_id=self.embedder_model_id),
            "reranker": (
                self.reranker.checkpoint(embedder_model_id=self.embedder_model_id) if self.reranker else None
            ),
        }

    @classmethod
    def load(
        cls, source: str | os.PathLike[str] | Mapping[str, Any], *, embedder_model_id: str | None = None
    ) -> MorModel:
        """Read a MoR checkpoint (a path or the loaded dict).

        Raises:
            CheckpointError: missing file, another kind or version, or another embedder.
        """
        ckpt = source if isinstance(source, Mapping) else read_checkpoint(Path(source))
        if ckpt.get("kind") != KIND or ckpt.get("format_version") != FORMAT_VERSION:
            raise CheckpointError(
                f"not a MoR checkpoint (kind {ckpt.get('kind')!r}, version {ckpt.get('format_version')!r})",
                hint="train one with 'kgqa train FILE --format stark'",
            )
        if embedder_model_id is not None and ckpt["embedder_model_id"] != embedder_model_id:
            raise CheckpointError(
                f"the MoR checkpoint was trained on embedder {ckpt['embedder_model_id']!r}, "
                f"the configured one is {embedder_model_id!r}",
                hint="set embedder.model to the checkpoint's embedder or re-train",
            )
        reranker = ckpt.get("reranker")
        return cls(
            schema=Schema(frozenset(tuple(t) for t in ckpt["schema"])),
            cues=Cues(left=dict(ckpt["cues"]["left"]), right=dict(ckpt["cues"]["right"])),
            planner=MetapathScorer.from_checkpoint(ckpt["planner"]),
            reranker=TrajectoryReranker.from_checkpoint(reranker) if reranker else None,
            embedder_model_id=str(ckpt["embedder_model_id"]),
        )


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The raw dict of any kgqa checkpoint file (to tell a MoR one from a KGQA one by ``kind``).

    Raises:
        CheckpointError: the file is missing or unreadable.
    """
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}", hint="train one first with 'kgqa train'")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt or unsafe files
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
    if not isinstance(ckpt, dict):
        raise CheckpointError(f"checkpoint {path} is a {type(ckpt).__name__}, not a dict")
    return ckpt


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
    """

    span: str
    linked: tuple[LinkedEntity, ...]
    topic_types: tuple[str, ...]
    types: dict[str, str]
    vector: torch.Tensor


@dataclass(frozen=True, slots=True)
class MorResult:
    """MoR's answer to one question: ranked nodes, the plan that found them, timings in ms."""

    nodes: tuple[RankedNode, ...]
    plan: Metapath
    plan_prob: float
    anchors: Anchors
    timings_ms: dict[str, float]


@runtime_checkable
class Planner(Protocol):
    """Chooses a question's plan: the trained :class:`TrainedPlanner` (default) or the LLM
    planner (:class:`kgqa.reasoning.mor_planner.LLMPlanner`)."""

    def plan(self, question: str, reading: QuestionReading) -> tuple[Metapath, float]:
        """The plan for ``question`` (valid in the store's schema) and its probability in [0, 1]."""
        ...


class TrainedPlanner:
    """The plan scorer of a :class:`MorModel`: the likeliest of the schema's enumerated plans."""

    def __init__(self, model: MorModel) -> None:
        self.model = model

    def plan(self, question: str, reading: QuestionReading) -> tuple[Metapath, float]:
        scorer = self.model.planner
        with torch.no_grad():
            linked = scorer.linked_types(reading.topic_types)[None]
            probs = torch.softmax(scorer(reading.vector[None], linked, self.model.plan_matrix)[0], 0)
        best = int(torch.argmax(probs))
        return self.model.plans[best], float(probs[best])


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
        description and dropped, except one that opens it ("both <name> and <description>"),
        which is cut off the span instead.
        """
        span = self.model.cues.span(question) or question
        try:
            linked = link(self.store, self.embedder, question)
            found, topics = linked.candidates, linked.topics
        except EntityNotFoundError:
            found, topics = (), ()
        if span != question:
            start = question.find(span)
            kept = []
            for cand in found:
                at = question.find(cand.mention) if cand.mention else -1
                if at < start or at >= start + len(span):
                    kept.append(cand)
                elif question[start:at].strip() in ("", "both"):
                    rest = question[at + len(cand.mention) : start + len(span)].strip()
                    if rest.startswith("and "):
                        kept.append(cand)
                        span = rest.removeprefix("and ").strip() or span
            found, topics = tuple(kept), tuple(t for t in topics if t in kept)
        types = node_types(self.store, [c.id for c in found])
        with torch.no_grad():
            vectors = self.embedder.embed([question, span])
        self.traverser.remember({question: vectors[0], span: vectors[1]})
        return QuestionReading(
            span, tuple(found), tuple(types.get(t.id, "") for t in topics), types, vectors[0]
        )

    def anchors(self, question: str, plan: Metapath, reading: QuestionReading) -> Anchors:
        """The question's spans and the candidates for ``plan``'s named nodes.

        A named node's candidates are the linker's entities of its type and the nodes of its type
        whose text best matches the question outside the description (full-text), each scored by
        :func:`~kgqa.retrieval.mor.traversal.alias_match`: questions name phenotypes by synonyms
        too, which a node keeps in its text, not its name, so the linker alone picks partial
        name matches over them.
        """
        outside = question.replace(reading.span, " ") if reading.span != question else question
        names: dict[tuple[int, int], list[tuple[str, float]]] = {}
        for c, chain in enumerate(plan.chains):
            end = chain.nodes[-1]
            if end.restriction != "name":
                continue
            linked = {e.id: e.score for e in reading.linked if reading.types.get(e.id) == end.type}
            ids = [*linked, *(h["id"] for h in self.traverser.fulltext(outside, end.type, SYNONYM_K))]
            rows = self.traverser.node_texts(ids)
            scored = [
                (i, alias_match(outside, rows[i]["name"], rows[i]["text"]), linked.get(i, 0.0))
                for i in dict.fromkeys(ids)
                if i in rows
            ]
            scored.sort(key=lambda t: (-t[1], -t[2], t[0]))
            names[(c, len(chain.nodes) - 1)] = [(i, score) for i, score, _ in scored]
        spans = {(0, 0): reading.span} if plan.answer.restriction == "text" else {}
        for c, chain in enumerate(plan.chains):
            for i, node in enumerate(chain.nodes[1:], start=1):
                if node.restriction == "text":
                    spans[(c, i)] = reading.span
        return Anchors(spans=spans, names=names, question=question)

    def candidates(
        self, question: str, *, structural: bool = True, textual: bool = True, text_matching: bool = True
    ) -> tuple[list[Candidate], Metapath, float, Anchors, dict[str, float]]:
        """Plan, link and traverse; the unranked candidates and what produced them."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        reading = self.read(question)
        timings["link"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        plan, prob = self.planner.plan(question, reading)
        anchors = self.anchors(question, plan, reading)
        timings["plan"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        found = self.traverser.run(
            plan, anchors, structural=structural, textual=textual, text_matching=text_matching
        )
        timings["traverse"] = (time.perf_counter() - started) * 1000
        return found, plan, prob, anchors, timings

    def rank(
        self, found: Sequence[Candidate], plan: Metapath, prob: float, *, rerank: bool = True
    ) -> list[tuple[Candidate, float]]:
        """Candidates with their scores, best first (ties by id): the reranker's where the model has
        one and ``rerank`` is on, else :func:`heuristic_scores`."""
        if not found:
            return []
        x = features(found, chains=len(plan.chains), plan_prob=prob)
        with torch.no_grad():
            scores = (
                self.model.reranker(x) if rerank and self.model.reranker is not None else heuristic_scores(x)
            )
        pairs = list(zip(found, scores.tolist(), strict=True))
        return sorted(pairs, key=lambda p: (-p[1], p[0].id))

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
        found, plan, prob, anchors, timings = self.candidates(
            question, structural=structural, textual=textual, text_matching=text_matching
        )
        started = time.perf_counter()
        ranked = self.rank(found, plan, prob, rerank=rerank)[:top_k]
        names = self.traverser.node_texts([c.id for c, _ in ranked])
        timings["rerank"] = (time.perf_counter() - started) * 1000
        nodes = tuple(
            RankedNode(
                c.id,
                names[c.id]["name"] if c.id in names else c.id,
                plan.answer.type,
                score,
                tuple(sorted(c.trajectories, key=lambda t: -t.score)[:EVIDENCE_TRAJECTORIES]),
            )
            for c, score in ranked
        )
        return MorResult(nodes, plan, prob, anchors, timings)
