"""MoR training questions made from a text-rich typed graph itself (``kgqa train --format stark
--from-graph``).

Why: MoR's planner learns from each question's typed plan (its ``metapath``) and its reranker
from the answers; a graph nobody labelled has neither, but every typed plan with its anchors
pinned to nodes gives a definite answer set on the graph (issue 27). This module samples such
plans and words them from the graph's vocabulary (:mod:`retriever_training.plan_wording`);
``kgqa train`` then trains MoR on them as on a labelled ``stark`` file.

What is generated, for a seed and a count:

- **Shapes**: the skeletons of the schema's plans (:func:`~kgqa.retrieval.mor.plan.enumerate_plans`)
  with at most one described node (a question carries one description, which is what the span
  cues read): chains, hops per chain, which nodes are described or named. Plans of 1, 2 and 3
  hops in all get equal shares of the turns (as paths of each length do in
  :mod:`retriever_training.from_graph`: there are many more long shapes than short ones), and
  within a length the (shape, answer type) pairs take turns in a seeded order, so every shape
  and every answer type is asked about alike.
- **Plans**: an answer node of a type the shape can end at (named, at most
  :data:`~retriever_training.from_graph.WALK_MAX_DEGREE` relationships, drawn from a seeded
  sample), then each chain walked from it one relationship at a time: with
  :data:`EDGE_SHARE` chance uniformly over the node's relationships (relation types are asked
  about as often as the graph uses them), else uniformly over the kinds of step it can take (rare
  relations still get asked). A hop of a type that joins a label to itself reads "one or two
  steps" (``{1,2}``) with :data:`REPEAT_SHARE` chance. Plans outside the enumerated ones (too
  long, a chain twice) are dropped.
- **Anchors**: the walk's ends, named or described as the shape says; a middle node or the
  answer described where the shape says so. A description is the first sentence of the node's
  text that is no field list (``Synonyms: ...``) and no boilerplate: a sentence that, with the
  node's name and digits masked, more than one sampled node of its type shares ("Human gene X
  (NCBI Gene ID 10)") describes nothing.
- **Answers**: every node of the answer type from which each chain's hops, in the stored
  directions and through nodes of the plan's types, reach the chain's anchor through the pinned
  described nodes, never twice through one node (as MoR's traversal walks); the intersection
  over chains. They are computed over the full adjacency of every node walked through
  (:class:`~retriever_training.from_graph.Neighbourhoods`); a plan that would walk through a
  hub, spread past :data:`~retriever_training.from_graph.MAX_FRONTIER` nodes between its ends,
  reach more than :data:`CHAIN_CAP` per chain or more than
  :data:`~retriever_training.from_graph.MAX_ANSWERS` in all is dropped, never truncated, so
  every answer set is exactly what the graph gives.

The questions are written to ``<data-dir>/from-graph/<key>.jsonl`` (the ``stark`` fields plus
the anchors, the shape and the surface form), atomically, under a key over the KB's
fingerprint, the seed, the count and :data:`GENERATOR_VERSION`; a second run with the same key
reads the file instead of walking the graph again.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kgqa.errors import ConfigError
from kgqa.retrieval.mor.plan import Chain, Hop, Metapath, PlanNode, Schema, enumerate_plans, store_metapath
from kgqa.retrieval.mor.traversal import content_words, node_rows, read_schema
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import QAExample
from retriever_training import plan_wording
from retriever_training.from_graph import (
    MAX_ANSWERS,
    MAX_FRONTIER,
    POOL_LIMIT,
    WALK_MAX_DEGREE,
    Neighbourhoods,
    named,
    question_file_path,
    read_records,
    write_records,
)
from retriever_training.path_wording import Step, relation_words

#: Bumped whenever the same seed and KB would give other questions.
GENERATOR_VERSION = 1
#: Share of walk steps picked uniformly over a node's relationships (else over its step kinds).
EDGE_SHARE = 0.8
#: Share of hops of a self-joining relation type read as one or two steps (``{1,2}``).
REPEAT_SHARE = 0.3
#: Most answer-type nodes one chain of a two-chain plan may reach before the intersection.
CHAIN_CAP = 1000
#: Nodes sampled per question asked for (answer candidates, and the boilerplate statistics).
SAMPLE_FACTOR = 20
#: Tries at one shape before the next shape gets its turn.
TRIES = 6
#: Passes over the shapes' turns, in multiples of the count, before generation stops short.
PASSES = 3
#: Content words besides its name's that a description needs at least.
MIN_DESCRIPTION_WORDS = 2
#: Node ids per text read.
READ_BATCH = 1000

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_FIELD = re.compile(r"^\w[\w ]{0,30}:\s")
_DIGITS = re.compile(r"\d+")


@dataclass(slots=True)
class TypedGenerationReport:
    """What ``--format stark --from-graph`` generated (part of ``kgqa train --json``).

    Attributes:
        path: the JSONL file of the questions.
        cached: True when the file was there already and was reused.
        questions: questions in the file.
        by_shape: questions per plan shape (the metapath with types and relations left out).
        by_answer_type: questions per answer type.
        plans: distinct metapaths asked about.
        surface_forms: distinct forms, and the mean and most forms per metapath.
        examples: the first few questions, for a look.
    """

    path: str
    cached: bool
    questions: int
    by_shape: dict[str, int] = field(default_factory=dict)
    by_answer_type: dict[str, int] = field(default_factory=dict)
    plans: int = 0
    surface_forms: dict[str, float] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def typed_questions_file(
    store: GraphStore, data_dir: Path, *, count: int, seed: int, progress: bool = False
) -> TypedGenerationReport:
    """Generate ``count`` questions from ``store`` (module docstring) into
    ``<data_dir>/from-graph/<key>.jsonl``, or reuse that file when an earlier run wrote it.

    Raises:
        ConfigError: the graph gave no question (no typed schema, or no plan with named or
            described anchors and few answers).
    """
    head = {"kind": "stark", "seed": seed, "count": count, "version": GENERATOR_VERSION}
    path = question_file_path(store, data_dir, head)
    if path.is_file():
        return summarise(path, read_records(path), cached=True)
    records = generate_records(store, count=count, seed=seed, progress=progress)
    if not records:
        raise ConfigError(
            "the graph gave no MoR training question: no typed plan from a named node reaches "
            f"named or described anchors with at most {MAX_ANSWERS} answers",
            hint="check --data-dir (store.path) holds a typed graph (kgqa ingest --format typed-csv)",
        )
    write_records(path, records)
    return summarise(path, records, cached=False)


def read_typed_questions(path: Path) -> list[QAExample]:
    """The questions of a generated file, as ``read_questions(..., "stark")`` gives a labelled one
    (``qtype`` the shape)."""
    return [
        QAExample(
            qid=r["id"],
            question=r["query"],
            topic_ids=(),
            answers=tuple(r["answer_ids"]),
            line=n,
            qtype=r["shape"],
            metapath=r["metapath"],
            text_constraints=(r["text_constraint"],) if r["text_constraint"] else (),
        )
        for n, r in enumerate(read_records(path))
    ]


def plan_shape(plan: Metapath) -> str:
    """The plan without its types and relations: ``*[text] -{2}-> [name] AND * -> [text]``
    (``*`` the answer, one arrow a hop, ``{2}`` one or two steps)."""
    chains = []
    for chain in plan.chains:
        parts = []
        for hop, node in zip(chain.hops, chain.nodes[1:], strict=True):
            parts += ["-{2}->" if hop.max_hops == 2 else "->", f"[{node.restriction}]"]
        chains.append(" ".join(parts))
    answer = "*" + (f"[{plan.answer.restriction}]" if plan.answer.restriction else "")
    return f"{answer} " + " AND ".join(sorted(chains))


def _skeleton(plan: Metapath) -> tuple[str, tuple[tuple[str, ...], ...]]:
    """What a walk must fill in: the answer's restriction and each chain's node restrictions."""
    return plan.answer.restriction, tuple(tuple(n.restriction for n in c.nodes[1:]) for c in plan.chains)


def generate_records(
    store: GraphStore, *, count: int, seed: int, progress: bool = False
) -> list[dict[str, Any]]:
    """Up to ``count`` question records from ``store``, the same ones for the same seed and graph."""
    from retriever_training.refine import relation_source_names

    rng = random.Random(seed)
    schema = read_schema(store)
    plans = [p for p in enumerate_plans(schema) if p.text_nodes() <= 1]
    keys = {p.key for p in plans}
    by_hops: dict[int, list[tuple[tuple[str, tuple[tuple[str, ...], ...]], str]]] = {}
    for skeleton, answer_type in sorted({(_skeleton(p), p.answer.type) for p in plans}):
        by_hops.setdefault(sum(len(c) for c in skeleton[1]), []).append((skeleton, answer_type))
    for turns in by_hops.values():
        rng.shuffle(turns)
    lengths = sorted(by_hops)
    nodes = _Nodes(store, Neighbourhoods(store), sample=count * SAMPLE_FACTOR, rng=rng)
    sources = relation_source_names(store)
    seen: set[tuple[Any, ...]] = set()
    out: list[dict[str, Any]] = []
    with tqdm(total=count, desc="generating questions", disable=not progress, leave=False) as bar:
        for turn in range(PASSES * count):
            if len(out) >= count or not lengths:
                break
            turns = by_hops[lengths[turn % len(lengths)]]
            skeleton, answer_type = turns[(turn // len(lengths)) % len(turns)]
            for _ in range(TRIES):
                made = _instance(nodes, schema, keys, skeleton, answer_type, rng)
                if made is None or made[0] in seen:
                    continue
                seen.add(made[0])
                record = _record(len(out), *made[1:], nodes, sources, rng)
                if record is not None:
                    out.append(record)
                    bar.update()
                    break
    return out


class _Nodes:
    """The graph as the generator reads it: adjacency (:class:`Neighbourhoods`), a seeded sample
    of answer candidates per type, node texts on demand, and the boilerplate sentence shapes."""

    def __init__(self, store: GraphStore, graph: Neighbourhoods, *, sample: int, rng: random.Random) -> None:
        self.store = store
        self.graph = graph
        self.texts: dict[str, str] = {}
        rows = store.run(
            queries.get("entities_walk_pool"), {"max_degree": WALK_MAX_DEGREE, "limit": POOL_LIMIT}
        )
        pool = sorted(r["id"] for r in rows if named(r["name"]))
        rng.shuffle(pool)
        pool = pool[:sample]
        self._read(pool)
        self.by_type: dict[str, list[str]] = {}
        shapes: Counter[tuple[str, str]] = Counter()
        for node_id in pool:
            node_type = graph.types.get(node_id)
            if node_type:
                self.by_type.setdefault(node_type, []).append(node_id)
                sentence = self._sentence(node_id)
                if sentence:
                    shapes[(node_type, self._masked(node_id, sentence))] += 1
        self.boilerplate = {s for s, n in shapes.items() if n > 1}

    def _read(self, ids: Sequence[str]) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self.texts]
        for start in range(0, len(missing), READ_BATCH):
            for row in node_rows(self.store, missing[start : start + READ_BATCH]):
                self.texts[row["id"]] = row["text"] or ""
                self.graph.names.setdefault(row["id"], row["name"])
                self.graph.types.setdefault(row["id"], row["type"])

    def _sentence(self, node_id: str) -> str | None:
        for sentence in _SENTENCE.split(self.texts.get(node_id, "").strip()):
            if sentence and not _FIELD.match(sentence):
                return sentence.rstrip(".").strip()
        return None

    def _masked(self, node_id: str, sentence: str) -> str:
        name = (self.graph.names.get(node_id) or "").lower()
        masked = sentence.lower().replace(name, "<name>") if name else sentence.lower()
        return _DIGITS.sub("#", masked)

    def description(self, node_id: str) -> str | None:
        """The node's description (module docstring), else None."""
        self._read([node_id])
        sentence = self._sentence(node_id)
        node_type = self.graph.types.get(node_id) or ""
        if sentence is None or (node_type, self._masked(node_id, sentence)) in self.boilerplate:
            return None
        name_words = set(content_words(self.graph.names.get(node_id) or ""))
        if len(set(content_words(sentence)) - name_words) < MIN_DESCRIPTION_WORDS:
            return None
        return sentence


@dataclass(frozen=True, slots=True)
class _Walked:
    """One chain as walked from the answer: its hops and the node after each."""

    hops: tuple[Hop, ...]
    nodes: tuple[str, ...]


def _instance(
    nodes: _Nodes,
    schema: Schema,
    keys: set[tuple[str, ...]],
    skeleton: tuple[str, tuple[tuple[str, ...], ...]],
    answer_type: str,
    rng: random.Random,
) -> tuple[tuple[Any, ...], Metapath, list[_Walked], str, tuple[str, ...], dict[str, str]] | None:
    """One plan of ``skeleton`` walked from a sampled answer node, its pins and exact answers:
    (dedup key, plan, its chains as walked, answer id, answers, described/named node id -> its
    restriction), or None."""
    graph = nodes.graph
    candidates = nodes.by_type.get(answer_type)
    if not candidates:
        return None
    answer = rng.choice(candidates)
    answer_restriction, chains = skeleton
    walked = []
    for restrictions in chains:
        chain = _walk(graph, schema, answer, len(restrictions), rng)
        if chain is None:
            return None
        walked.append(chain)
    plan = Metapath(
        tuple(
            Chain(
                (
                    PlanNode(answer_type, answer_restriction if i == 0 else ""),
                    *(PlanNode(graph.types[n] or "", r) for n, r in zip(w.nodes, rs, strict=True)),
                ),
                w.hops,
            )
            for i, (w, rs) in enumerate(zip(walked, chains, strict=True))
        )
    )
    if plan.key not in keys:
        return None
    pins: dict[str, str] = {answer: "text"} if answer_restriction == "text" else {}
    for w, rs in zip(walked, chains, strict=True):
        for node_id, r in zip(w.nodes, rs, strict=True):
            if r == "text" and nodes.description(node_id) is None:
                return None
            if r == "name" and not named(graph.names.get(node_id)):
                return None
            if r:
                pins[node_id] = r
    if answer_restriction == "text" and nodes.description(answer) is None:
        return None
    answers = _answers(graph, plan, walked, pins, answer)
    if answers is None or not 0 < len(answers) <= MAX_ANSWERS or answer not in answers:
        return None
    if not all(named(graph.names.get(a)) for a in answers):
        return None
    key = (str(plan), tuple(sorted(pins)), answers)
    return key, plan, walked, answer, answers, pins


def _walk(
    graph: Neighbourhoods, schema: Schema, start: str, length: int, rng: random.Random
) -> _Walked | None:
    """A walk of ``length`` relationships from ``start`` through typed nodes, never twice through
    one node; each hop ``{1,2}`` with :data:`REPEAT_SHARE` chance where its type joins a label to
    itself."""
    here, seen, hops, path = start, {start}, [], []
    for _ in range(length):
        graph.fetch((here,))
        if here not in graph.adj:
            return None
        moves = [
            (step, far)
            for step, fars in graph.adj[here].items()
            for far in fars
            if far not in seen and graph.types.get(far)
        ]
        if not moves:
            return None
        if rng.random() < EDGE_SHARE:
            step, far = rng.choice(moves)
        else:
            step = rng.choice(sorted({s for s, _ in moves}, key=lambda s: (s.relation, s.forward)))
            far = rng.choice([f for s, f in moves if s == step])
        here_type, far_type = graph.types[here] or "", graph.types[far] or ""
        joins_itself = (here_type, step.relation, far_type) in schema.triples and here_type == far_type
        repeat = joins_itself and rng.random() < REPEAT_SHARE
        hops.append(Hop(step.relation, step.forward, 2 if repeat else 1))
        path.append(far)
        seen.add(far)
        here = far
    return _Walked(tuple(hops), tuple(path))


def _answers(
    graph: Neighbourhoods, plan: Metapath, walked: Sequence[_Walked], pins: dict[str, str], answer: str
) -> tuple[str, ...] | None:
    """The plan's exact answers (module docstring), sorted, or None where a walk crosses a hub or
    spreads too far."""
    found: set[str] | None = {answer} if plan.answer.restriction == "text" else None
    for chain, w in zip(plan.chains, walked, strict=True):
        ends = chain_ends(graph, chain, w.nodes[-1], {n for n in w.nodes[:-1] if n in pins})
        if ends is None:
            return None
        found = ends if found is None else found & ends
    return tuple(sorted(found or ()))


def chain_ends(graph: Neighbourhoods, chain: Chain, anchor: str, pinned: set[str]) -> set[str] | None:
    """The nodes of the chain's answer type from which its hops reach ``anchor``: walked back from
    the anchor, through nodes of the chain's types, the ``text`` nodes between only through
    ``pinned`` ones, never twice through one node; None where a node on the way is a hub, a
    frontier between the ends exceeds :data:`MAX_FRONTIER` or the ends :data:`CHAIN_CAP`."""
    paths: list[tuple[str, ...]] = [(anchor,)]
    for position in range(len(chain.hops) - 1, -1, -1):
        hop, node = chain.hops[position], chain.nodes[position]
        back = Step(hop.rel_type, not hop.forward)
        reached: list[tuple[str, ...]] = []
        current = paths
        for _ in range(hop.max_hops):
            heads = {p[-1] for p in current}
            if len(heads) > MAX_FRONTIER:
                return None
            graph.fetch(heads)
            if heads & graph.hubs:
                return None
            current = [
                (*p, far)
                for p in current
                for far in graph.adj.get(p[-1], {}).get(back, ())
                if far not in p and graph.types.get(far) == node.type
            ]
            reached += current
        if position > 0 and node.restriction == "text":
            reached = [p for p in reached if p[-1] in pinned]
        paths = reached
        if not paths:
            return set()
    ends = {p[-1] for p in paths}
    return None if len(ends) > CHAIN_CAP else ends


def _record(
    n: int,
    plan: Metapath,
    walked: Sequence[_Walked],
    answer: str,
    answers: tuple[str, ...],
    pins: dict[str, str],
    nodes: _Nodes,
    sources: dict[str, str],
    rng: random.Random,
) -> dict[str, Any] | None:
    """The JSONL object of one question: the ``stark`` fields plus anchors, ``pinned`` (the
    answer's pinned id, then per chain the pinned id of each node after the answer, null where
    none), shape and form; None
    where a relation or type name does not survive the metapath notation (``store_metapath``)."""
    graph = nodes.graph
    described = next((i for i, r in pins.items() if r == "text"), None)
    description = nodes.description(described) if described else None
    if description is not None and rng.random() < 0.5:
        description = description[:1].lower() + description[1:]

    def node(node_id: str, restriction: str, node_type: str) -> plan_wording.PlanNode:
        return plan_wording.PlanNode(
            node_type,
            name=graph.names[node_id] if restriction == "name" else None,
            description=description if restriction == "text" else None,
        )

    chains = []
    for chain, w in zip(plan.chains, walked, strict=True):
        chains.append(
            [
                (
                    plan_wording.PlanHop(
                        relation_words(sources.get(h.rel_type, h.rel_type)), h.forward, h.max_hops == 2
                    ),
                    node(i, nd.restriction, nd.type),
                )
                for h, nd, i in zip(chain.hops, chain.nodes[1:], w.nodes, strict=True)
            ]
        )
    answer_node = node(answer, plan.answer.restriction, plan.answer.type)
    worded = plan_wording.word_plan(answer_node, chains, plural=len(answers) > 1, rng=rng)
    source_plan = Metapath(
        tuple(
            Chain(
                c.nodes,
                tuple(Hop(sources.get(h.rel_type, h.rel_type), h.forward, h.max_hops) for h in c.hops),
            )
            for c in plan.chains
        )
    )
    if store_metapath(str(source_plan)).key != plan.key:
        return None  # a relation or type name the notation cannot carry
    return {
        "id": f"graph:{n}",
        "query": worded.text,
        "answer_ids": list(answers),
        "answer_names": [graph.names.get(a) for a in answers],
        "metapath": str(source_plan),
        "text_constraint": description or "",
        "anchor_ids": {r: sorted(i for i, rr in pins.items() if rr == r) for r in ("text", "name")},
        "pinned": [
            [answer if plan.answer.restriction else None],
            *([i if i in pins else None for i in w.nodes] for w in walked),
        ],
        "shape": plan_shape(plan),
        "form": worded.form,
    }


def summarise(path: Path, records: Sequence[dict[str, Any]], *, cached: bool) -> TypedGenerationReport:
    """The report of a question file's records (the same for a fresh file and a reused one)."""
    forms: dict[str, set[str]] = {}
    for record in records:
        forms.setdefault(record["metapath"], set()).add(record["form"])
    counts = [len(v) for v in forms.values()] or [0]
    return TypedGenerationReport(
        path=str(path),
        cached=cached,
        questions=len(records),
        by_shape=dict(sorted(Counter(r["shape"] for r in records).items())),
        by_answer_type=dict(sorted(Counter(r["metapath"].split("*")[0] for r in records).items())),
        plans=len(forms),
        surface_forms={
            "distinct": len({f for v in forms.values() for f in v}),
            "per_plan_mean": round(sum(counts) / len(counts), 3),
            "per_plan_max": max(counts),
        },
        examples=[r["query"] for r in records[:5]],
    )
