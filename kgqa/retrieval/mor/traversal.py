"""MoR's mixture of traversal on the store: textual matching of anchors, typed traversal along a
plan's chains, and textual retrieval of answer-type nodes, every candidate keeping its trajectories.

Each chain is walked from its anchor back to the answer (MoR 3.2): a ``text`` anchor starts from
the nodes of its type whose text best matches its span (vector index plus full-text, rescored
by :func:`text_similarity`), a ``name`` anchor from its first ``name_k`` candidates (the
retriever's, best alias match first). Every hop is one ``typed_expand`` call (typed by label and
relationship type, capped per source), and a node with a text restriction keeps only its best
matches. Index hits are kept until the next question, since its plans share spans. The answer's
candidates are the intersection of the chains' end sets, or their union when the intersection is
empty; the answer type's own best textual matches join them as a separate channel.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from kgqa.embed.protocol import Embedder
from kgqa.link import STOP_WORDS, escape_lucene
from kgqa.retrieval.mor.plan import Chain, Hop, Metapath, Schema
from kgqa.store import queries
from kgqa.store.protocol import GraphStore

_WORD = re.compile(r"[0-9a-z]+")

#: Channels a candidate can be reached by (``Trajectory.chain`` of the textual ones).
VECTOR_CHANNEL = -1
FULLTEXT_CHANNEL = -2


@dataclass(frozen=True, slots=True)
class TraversalSettings:
    """Caps of one traversal (MoR's defaults where the paper gives them).

    Attributes:
        anchor_k: textual matches kept per text anchor (MoR: 5; the reranker sorts them).
        step_k: textual matches kept at a text-restricted node inside a chain (MoR: 10).
        answer_k: answer-type nodes retrieved by text directly, per channel.
        name_k: candidates kept per name anchor (best alias match first).
        per_source: neighbours expanded per node and hop (hub cap).
        vector_fetch: vector neighbours fetched over all types before filtering by type.
    """

    anchor_k: int = 10
    step_k: int = 10
    answer_k: int = 20
    name_k: int = 3
    per_source: int = 5000
    vector_fetch: int = 400


@dataclass(frozen=True, slots=True)
class Anchors:
    """What the question says about a plan's nodes.

    Attributes:
        spans: text span per text-restricted node, keyed ``(chain, node index)``; the answer is
            ``(0, 0)``.
        names: linked ``(entity id, link score)`` per named node, keyed ``(chain, node index)``.
        question: the whole question (the answer type's direct textual channel reads it when the
            answer has no span of its own).
        named: how well the question names the plan's named nodes, in [0, 1]: the product, over
            them, of the best alias match of their candidates (1.0 when the plan names none). Not
            the linker's score: its fuzzy matches ("List" for the gene LYST) name nothing.
    """

    spans: dict[tuple[int, int], str]
    names: dict[tuple[int, int], list[tuple[str, float]]]
    question: str
    named: float = 1.0


@dataclass(frozen=True, slots=True)
class Trajectory:
    """How a candidate was reached.

    Attributes:
        chain: index of the plan chain; ``VECTOR_CHANNEL`` / ``FULLTEXT_CHANNEL`` for the direct
            textual channels.
        nodes: node ids from the anchor to the candidate (one id for a textual channel).
        rels: relationship element ids between consecutive nodes.
        rel_types: their types.
        rel_keys: their (head id, type, tail id) keys, in the graph's direction (saved evidence).
        text_scores: similarity of each text-restricted node on it to its span, anchor first, in [0, 1].
        name_score: link score of its named anchor (1.0 without one).
    """

    chain: int
    nodes: tuple[str, ...]
    rels: tuple[str, ...]
    rel_types: tuple[str, ...]
    rel_keys: tuple[tuple[str, str, str], ...]
    text_scores: tuple[float, ...]
    name_score: float

    @property
    def score(self) -> float:
        """Product of the link score and the text similarities along it, in [0, 1]."""
        value = self.name_score
        for s in self.text_scores:
            value *= s
        return value


@dataclass(slots=True)
class Candidate:
    """A node of the answer type with every trajectory that reached it."""

    id: str
    trajectories: list[Trajectory] = field(default_factory=list)
    answer_text: float = 0.0  # similarity to the answer's own span (0 when it has none)
    intersected: bool = False  # reached by every chain of the plan


def content_words(text: str) -> list[str]:
    """Lower-case words of ``text`` that are not stop words (what lexical matching compares)."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def lexical_overlap(span: str, text: str) -> float:
    """Share of the span's distinct content words found in ``text``, in [0, 1] (0 for an empty span).

    Why: descriptions in questions are trimmed, lightly reworded pieces of a node's text, so most
    of their words occur in it verbatim, which an embedding of the whole text only blurs.
    """
    words = set(content_words(span))
    return len(words & set(content_words(text))) / len(words) if words else 0.0


_SEGMENT = re.compile(r"[.;:]")


def alias_match(question: str, name: str, text: str | None) -> tuple[float, int]:
    """How well the question names a node: the best share, in [0, 1], of the content words of its
    name (whatever its length) or of one short segment of its text (``Synonyms: a; b.`` lists)
    found in the question, and how many words that share is (the larger count among equals).

    Why: a named anchor may be given by a synonym, and a partial match of a longer name (one
    word of three) must lose to a whole alias; among whole aliases, a longer one is the more
    specific reading ("increased lactate in body" over a one-word segment "The lactate").
    """
    asked = set(content_words(question))
    best = (0.0, 0)
    for phrase in [name, *_SEGMENT.split(text or "")]:
        words = set(content_words(phrase))
        if words and (phrase is name or len(words) <= MAX_ALIAS_WORDS):
            found = len(words & asked)
            best = max(best, (found / len(words), found))
    return best


#: Longest text segment :func:`alias_match` takes for an alias (longer ones are definitions).
MAX_ALIAS_WORDS = 8


class Traverser:
    """Runs plans on one store; the store scores its nodes against a question's embedded spans.

    Args:
        store: the graph store (typed nodes with ``type``, ``text``, embeddings and indexes).
        embedder: the store's embedding model (spans are embedded with it).
        settings: caps.
    """

    def __init__(self, store: GraphStore, embedder: Embedder, settings: TraversalSettings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._span_vectors: dict[str, torch.Tensor] = {}
        self._hits: dict[tuple[str, str, str, int], list[dict[str, Any]]] = {}

    def remember(self, vectors: dict[str, torch.Tensor]) -> None:
        """Use these embeddings of a question's texts (embedded in one batch) until the next
        question, and forget the index hits of the last one (kept within a question: the plans
        of one question look up the same spans)."""
        self._span_vectors = dict(vectors)
        self._hits = {}

    def span_vector(self, span: str) -> torch.Tensor:
        """The embedding of ``span`` (the remembered one, else embedded now and remembered)."""
        if span not in self._span_vectors:
            self._span_vectors[span] = self.embedder.embed([span])[0]
        return self._span_vectors[span]

    def text_similarity(self, span: str, nodes: Sequence[tuple[str, str]]) -> list[float]:
        """Similarity of each ``(id, name + text)`` to ``span``: the mean of the cosine of their
        embeddings on Neo4j's scale (1 + cos) / 2 and :func:`lexical_overlap`, in [0, 1].

        The cosine is computed by the store (``entities_similarity``), so over Bolt only one score
        per node crosses the wire, not its embedding; a node without an embedding counts as
        orthogonal to the span (0.5)."""
        if not nodes:
            return []
        ids = list(dict.fromkeys(i for i, _ in nodes))
        rows = self.store.run(
            queries.get("entities_similarity"), {"ids": ids, "embedding": self.span_vector(span).tolist()}
        )
        cosine = {r["id"]: r["score"] for r in rows if r["score"] is not None}
        return [(cosine.get(i, 0.5) + lexical_overlap(span, t)) / 2 for i, t in nodes]

    def text_matches(self, span: str, label: str, k: int) -> list[dict[str, Any]]:
        """The ``k`` nodes of type ``label`` best matching ``span`` by :meth:`text_similarity`,
        among its vector and full-text hits; rows ``{id, name, text, score, vector, fulltext}``
        where ``vector``/``fulltext`` say which index found them."""
        key = ("text", span, label, k)
        if key not in self._hits:
            self._hits[key] = self._text_matches(span, label, k)
        return self._hits[key]

    def _text_matches(self, span: str, label: str, k: int) -> list[dict[str, Any]]:
        hits: dict[str, dict[str, Any]] = {}
        for row in self.vector(span, label, 3 * k):
            hits[row["id"]] = {**row, "vector": True, "fulltext": False}
        for row in self.fulltext(span, label, 3 * k):
            hits.setdefault(row["id"], {**row, "vector": False})["fulltext"] = True
        rows = list(hits.values())
        scores = self.text_similarity(span, [(r["id"], f"{r['name']} {r['text'] or ''}") for r in rows])
        for row, score in zip(rows, scores, strict=True):
            row["score"] = score
        return sorted(rows, key=lambda r: (-r["score"], r["id"]))[:k]

    def vector(self, text: str, label: str, k: int) -> list[dict[str, Any]]:
        """Up to ``k`` nearest nodes of type ``label`` to the embedding of ``text`` (best first)."""
        key = ("vector", text, label, 0)
        if key not in self._hits:
            self._hits[key] = self.store.run(
                queries.get("mor_text_vector"),
                {
                    "embedding": self.span_vector(text).tolist(),
                    "k": self.settings.vector_fetch,
                    "label": label,
                },
            )
        return self._hits[key][:k]

    def fulltext(self, text: str, label: str, limit: int) -> list[dict[str, Any]]:
        """Full-text hits of type ``label`` for the content words of ``text`` (best first)."""
        words = content_words(text)
        if not words:
            return []
        key = ("fulltext", text, label, limit)
        if key not in self._hits:
            query = " ".join(escape_lucene(w) for w in words)
            self._hits[key] = self.store.run(
                queries.get("mor_text_fulltext"), {"query": query, "limit": limit, "label": label}
            )
        return self._hits[key]

    def expand(
        self, frontier: dict[str, list[Trajectory]], hop: Hop, label: str
    ) -> dict[str, list[Trajectory]]:
        """One hop from every frontier node toward the answer, each trajectory extended by the
        edge it crossed; at most ``per_source`` neighbours per node (hubs), in the store's order.

        The walk runs from the anchor's side, so it crosses ``hop`` against the direction the
        plan writes it in.
        """
        kernel = "typed_expand_in" if hop.forward else "typed_expand"
        reached: dict[str, list[Trajectory]] = {}
        current = frontier
        for _ in range(hop.max_hops):
            if not current:
                break
            cap = self.settings.per_source
            rows = self.store.run(
                queries.get(kernel),
                {
                    "source_ids": sorted(current),
                    "rel_type": hop.rel_type,
                    "label": label,
                    "limit": cap * len(current),
                },
            )
            per_source: collections.Counter[str] = collections.Counter()
            step: dict[str, list[Trajectory]] = {}
            for row in rows:
                source, target = row["source_id"], row["target_id"]
                per_source[source] += 1
                if per_source[source] > cap:
                    continue
                key = (target, hop.rel_type, source) if hop.forward else (source, hop.rel_type, target)
                for traj in current[source]:
                    if target in traj.nodes:
                        continue
                    extended = Trajectory(
                        traj.chain,
                        (*traj.nodes, target),
                        (*traj.rels, row["rel_eid"]),
                        (*traj.rel_types, hop.rel_type),
                        (*traj.rel_keys, key),
                        traj.text_scores,
                        traj.name_score,
                    )
                    step.setdefault(target, []).append(extended)
                    reached.setdefault(target, []).append(extended)
            current = step
        return reached

    def run_chain(
        self, index: int, chain: Chain, anchors: Anchors, *, text_matching: bool = True
    ) -> dict[str, list[Trajectory]]:
        """Walk one chain from its anchor to the answer type: answer id -> trajectories
        (``text_matching`` off: described nodes inside the chain are not filtered)."""
        last = len(chain.nodes) - 1
        end = chain.nodes[last]
        frontier: dict[str, list[Trajectory]] = {}
        if end.restriction == "name":
            for entity_id, score in anchors.names.get((index, last), [])[: self.settings.name_k]:
                frontier[entity_id] = [Trajectory(index, (entity_id,), (), (), (), (), score)]
        else:
            span = anchors.spans.get((index, last), anchors.question)
            for row in self.text_matches(span, end.type, self.settings.anchor_k):
                frontier[row["id"]] = [Trajectory(index, (row["id"],), (), (), (), (row["score"],), 1.0)]
        for position in range(last - 1, -1, -1):
            node = chain.nodes[position]
            frontier = self.expand(frontier, chain.hops[position], node.type)
            if position > 0 and node.restriction == "text" and text_matching:
                frontier = self._restrict(frontier, anchors.spans.get((index, position), anchors.question))
        return frontier

    def node_texts(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id, type, name, text}`` of each id found, by id."""
        return {r["id"]: r for r in node_rows(self.store, ids)}

    def _restrict(self, reached: dict[str, list[Trajectory]], span: str) -> dict[str, list[Trajectory]]:
        """Keep the ``step_k`` reached nodes that best match ``span``, scoring their trajectories."""
        rows = self.node_texts(sorted(reached))
        ids = sorted(i for i in reached if i in rows)
        texts = [(i, f"{rows[i]['name']} {rows[i]['text'] or ''}") for i in ids]
        scores = dict(zip(ids, self.text_similarity(span, texts), strict=True))
        best = sorted(ids, key=lambda i: (-scores[i], i))[: self.settings.step_k]
        return {
            i: [
                Trajectory(
                    t.chain,
                    t.nodes,
                    t.rels,
                    t.rel_types,
                    t.rel_keys,
                    (*t.text_scores, scores[i]),
                    t.name_score,
                )
                for t in reached[i]
            ]
            for i in best
        }

    def run(
        self,
        plan: Metapath,
        anchors: Anchors,
        *,
        structural: bool = True,
        textual: bool = True,
        text_matching: bool = True,
    ) -> list[Candidate]:
        """Candidates of ``plan``'s answer type, unranked, with their trajectories.

        Args:
            structural: walk the plan's chains (off: the textual channels alone).
            textual: add the answer type's direct vector and full-text matches.
            text_matching: match the plan's text restrictions (off, with ``textual`` off: structure
                alone; chains from described anchors are dropped, described nodes not filtered).
        """
        answer = plan.answer
        candidates: dict[str, Candidate] = {}
        if structural:
            per_chain = [
                self.run_chain(i, c, anchors, text_matching=text_matching)
                for i, c in enumerate(plan.chains)
                if text_matching or c.nodes[-1].restriction != "text"
            ]
            common = set.intersection(*(set(r) for r in per_chain)) if per_chain else set()
            for reached in per_chain:
                for node_id, trajs in reached.items():
                    if common and node_id not in common:
                        continue
                    cand = candidates.setdefault(node_id, Candidate(node_id))
                    cand.trajectories.extend(trajs)
                    cand.intersected = bool(common)
        if textual:
            span = anchors.spans.get((0, 0), anchors.question)
            vector_rows = self.vector(span, answer.type, self.settings.answer_k)
            fulltext_rows = self.fulltext(span, answer.type, self.settings.answer_k)
            for channel, rows in ((VECTOR_CHANNEL, vector_rows), (FULLTEXT_CHANNEL, fulltext_rows)):
                top = max((r["score"] for r in rows), default=1.0) or 1.0
                for row in rows:
                    cand = candidates.setdefault(row["id"], Candidate(row["id"]))
                    score = row["score"] if channel == VECTOR_CHANNEL else row["score"] / top
                    cand.trajectories.append(Trajectory(channel, (row["id"],), (), (), (), (score,), 1.0))
        if text_matching and answer.restriction == "text" and (0, 0) in anchors.spans and candidates:
            found = self.node_texts(sorted(candidates))
            texts = [(i, f"{r['name']} {r['text'] or ''}") for i, r in sorted(found.items())]
            for (i, _), s in zip(texts, self.text_similarity(anchors.spans[(0, 0)], texts), strict=True):
                candidates[i].answer_text = s
        return list(candidates.values())


def read_schema(store: GraphStore) -> Schema:
    """The store's schema: which node types each relationship type joins (one scan of the edges)."""
    rows = store.run(queries.get("mor_schema"))
    return Schema(frozenset((r["source_type"], r["rel_type"], r["target_type"]) for r in rows))


def node_rows(store: GraphStore, ids: Sequence[str]) -> list[dict[str, Any]]:
    """``{id, type, name, text}`` of the ids found in the store."""
    return store.run(queries.get("mor_nodes_get"), {"ids": list(dict.fromkeys(ids))})


def node_types(store: GraphStore, ids: Sequence[str]) -> dict[str, str]:
    """Entity id -> type (label) for the ids found in the store."""
    return {r["id"]: r["type"] for r in node_rows(store, ids) if r["type"]}
