"""Training questions made from the graph itself (``kgqa train --from-graph``).

Why: people who bring their own graph rarely have question-answer pairs for it, and a checkpoint
trained on one graph carries poorly to another (issue 27). The graph already says which
questions it can answer: every relation path from a named entity reaches a definite set of
entities. This module samples such paths and words them from the graph's vocabulary
(:mod:`retriever_training.path_wording`); ``kgqa train`` then trains on them as on any
``rog-jsonl`` file (their ``relation_paths`` give the usual weak labels).

What is generated, for a seed and a count:

- **Topics**: entities with 1..:data:`TOPIC_MAX_DEGREE` relationships and a name (hubs and
  nameless nodes such as Freebase CVT mids never start a question), a seeded sample of
  :data:`POOL_FACTOR` x count of them, taken in turn across strata of (rarest incident relation
  type, degree band), so rare relations and both leaves and well-connected entities get asked.
- **Paths**: signed relation paths of 1..:data:`MAX_STEPS` steps (lengths in equal shares),
  walked in either direction, a step chosen with weight favouring relation types used less so
  far. The answers are the ends of *all* walks of the path from the topic that never come back
  to it (the "never back" walk rule every checkpoint starts from), computed over the full
  adjacency of every entity walked through (:file:`cypher/entities_neighbours.cypher`); a path
  that would walk through a hub (more than :data:`WALK_MAX_DEGREE` relationships), spreads past
  :data:`MAX_FRONTIER` entities, ends at more than :data:`MAX_ANSWERS` or at a nameless node
  is dropped, never truncated, so every answer set is exactly what the graph gives. Nameless
  nodes may be walked through (Freebase CVTs).
- **Conjunctions** (:data:`CONJUNCTION_SHARE` of the questions): what one step from each of two
  topics reaches alike, where each step alone reaches more.

The questions are written to ``<data-dir>/from-graph/<key>.jsonl`` (``rog-jsonl`` plus the
answers' names, the signed steps and the surface form, for a reader to inspect), atomically,
under a key over the KB's fingerprint, the seed, the count and :data:`GENERATOR_VERSION`; a
second run with the same key reads the file instead of walking the graph again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kgqa.atomic_write import atomic_write
from kgqa.errors import ConfigError
from kgqa.eval.datasets import rog_record
from kgqa.names import RESERVED_LABELS
from kgqa.pipeline import GRAPH_QUESTIONS_DIR
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import QAExample
from retriever_training.example_cache import kb_fingerprint
from retriever_training.path_wording import Step, Worded, relation_words, word_conjunction, word_path

#: Bumped whenever the same seed and KB would give other questions.
GENERATOR_VERSION = 1
#: Most steps of a generated path (``retrieval.hops`` walks as far).
MAX_STEPS = 3
#: Most answers of a generated question.
MAX_ANSWERS = 30
#: Most entities a walk may reach after a step short of the last (bounds the reads).
MAX_FRONTIER = 50
#: Topics have at most this many relationships (hubs make answer sets of thousands).
TOPIC_MAX_DEGREE = 200
#: Entities with more relationships are not walked through (their adjacency is not read).
WALK_MAX_DEGREE = 1000
#: Candidate topics drawn per question asked for.
POOL_FACTOR = 3
#: Share of two-topic questions.
CONJUNCTION_SHARE = 0.1
#: Tries at a random path of one length from one topic before a shorter length is tried.
TRIES = 4
#: Passes over the candidate topics before generation stops short of the count.
PASSES = 3
#: Pool rows read at most.
POOL_LIMIT = 2_000_000
#: Ids per neighbourhood read.
FETCH_BATCH = 200
#: Names that are machine ids rather than words (Freebase mids ``m.0abc12``, ``g.11b...``).
_MACHINE_ID = re.compile(r"[mg]\.[0-9a-z_]+\Z")


@dataclass(slots=True)
class GenerationReport:
    """What ``--from-graph`` generated (part of ``kgqa train --json``).

    Attributes:
        path: the JSONL file of the questions.
        cached: True when the file was there already and was reused.
        questions: questions in the file.
        by_length: questions per path length in steps (conjunctions under ``"and"``).
        paths_per_relation: source relation name -> distinct signed paths that cross it.
        surface_forms: distinct forms, and the mean and most forms per signed path.
        examples: the first few questions, for a look.
    """

    path: str
    cached: bool
    questions: int
    by_length: dict[str, int] = field(default_factory=dict)
    paths_per_relation: dict[str, int] = field(default_factory=dict)
    surface_forms: dict[str, float] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class GraphQuestion:
    """One generated question with how it was made.

    Attributes:
        example: the question (``qid`` ``graph:<n>``, topic and answer ids, ``relation_paths`` the
            source relation names of each topic's path).
        steps: the signed path from each topic.
        answer_names: the answers' names, in ``example.answers`` order.
        form: the surface form it was worded in.
    """

    example: QAExample
    steps: tuple[tuple[Step, ...], ...]
    answer_names: tuple[str, ...]
    form: str

    def to_record(self) -> dict[str, Any]:
        """The JSONL object: ``rog-jsonl`` fields plus ``answer`` (names), ``steps`` and ``form``."""
        return {
            **rog_record(self.example),
            "answer": list(self.answer_names),
            "steps": [[s.to_list() for s in path] for path in self.steps],
            "form": self.form,
        }


def graph_questions_file(
    store: GraphStore, data_dir: Path, *, count: int, seed: int, progress: bool = False
) -> GenerationReport:
    """Generate ``count`` questions from ``store`` (module docstring) into
    ``<data_dir>/from-graph/<key>.jsonl``, or reuse that file when an earlier run wrote it.

    Raises:
        ConfigError: the graph gave no question (no named entity with a short path whose answers
            are named and few).
    """
    path = question_file_path(store, data_dir, {"seed": seed, "count": count, "version": GENERATOR_VERSION})
    if path.is_file():
        return summarise(path, read_records(path), cached=True)
    questions = generate_questions(store, count=count, seed=seed, progress=progress)
    if not questions:
        raise ConfigError(
            f"the graph gave no training question: no entity with 1 to {TOPIC_MAX_DEGREE} relationships "
            f"and a name starts a path to at most {MAX_ANSWERS} named entities",
            hint="check --data-dir (store.path); a graph of hubs needs labelled questions (kgqa train FILE)",
        )
    records = [q.to_record() for q in questions]
    write_records(path, records)
    return summarise(path, records, cached=False)


def question_file_path(store: GraphStore, data_dir: Path, head: dict[str, Any]) -> Path:
    """``<data_dir>/from-graph/<key>.jsonl``, the key a hash of the KB's fingerprint and ``head``
    (what else fixes the questions: seed, count, generator version, kind), so a re-run with the
    same ones finds the file an earlier run wrote and any change writes another."""
    keyed = {"kb": kb_fingerprint(store), **head}
    key = hashlib.sha256(json.dumps(keyed, sort_keys=True, default=str).encode()).hexdigest()[:24]
    return data_dir / GRAPH_QUESTIONS_DIR / f"{key}.jsonl"


def write_records(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Write ``records`` as JSONL, atomically (a killed run leaves no partial file to reuse)."""
    with atomic_write(path) as out:
        for record in records:
            out.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))


def generate_questions(
    store: GraphStore, *, count: int, seed: int, progress: bool = False
) -> list[GraphQuestion]:
    """Up to ``count`` questions from ``store``, the same ones for the same seed and graph."""
    from retriever_training.refine import relation_source_names

    rng = random.Random(seed)
    graph = Neighbourhoods(store)
    sources = relation_source_names(store)
    rows = store.run(queries.get("entities_walk_pool"), {"max_degree": TOPIC_MAX_DEGREE, "limit": POOL_LIMIT})
    pool = sorted(r["id"] for r in rows if named(r["name"]))
    graph.names.update({r["id"]: r["name"] for r in rows})
    rng.shuffle(pool)
    candidates = pool[: count * POOL_FACTOR]
    order = _stratified(candidates, graph, rng)
    used: Counter[str] = Counter()
    seen: set[tuple[Any, ...]] = set()
    out: list[GraphQuestion] = []
    with tqdm(total=count, desc="generating questions", disable=not progress, leave=False) as bar:
        for _ in range(PASSES):
            for topic in order:
                if len(out) >= count:
                    return out
                made = None
                if rng.random() < CONJUNCTION_SHARE:
                    made = _conjunction(graph, topic, rng, sources)
                if made is None:
                    made = _path_question(graph, topic, 1 + len(out) % MAX_STEPS, rng, used, sources)
                if made is None or made[0] in seen:
                    continue
                seen.add(made[0])
                example = _numbered(made[1], len(out))
                out.append(example)
                for path in example.steps:
                    used.update(s.relation for s in path)
                bar.update()
    return out


def _numbered(question: GraphQuestion, n: int) -> GraphQuestion:
    """``question`` as the ``n``-th of the file (``graph:<n>``)."""
    return replace(question, example=replace(question.example, qid=f"graph:{n}", line=n))


def summarise(path: Path, records: Sequence[dict[str, Any]], *, cached: bool) -> GenerationReport:
    """The report of a question file's records (the same for a fresh file and a reused one)."""
    lengths: Counter[str] = Counter()
    per_relation: dict[str, set[str]] = {}
    forms: dict[str, set[str]] = {}
    for record in records:
        steps = record["steps"]
        lengths["and" if len(steps) > 1 else str(len(steps[0]))] += 1
        signed = " * ".join(" ".join(f"{r}:{d}" for r, d in path) for path in steps)
        forms.setdefault(signed, set()).add(record["form"])
        for relation in (r for p in record.get("relation_paths", []) for r in p):
            per_relation.setdefault(relation, set()).add(signed)
    counts = [len(v) for v in forms.values()] or [0]
    return GenerationReport(
        path=str(path),
        cached=cached,
        questions=len(records),
        by_length=dict(sorted(lengths.items())),
        paths_per_relation={k: len(v) for k, v in sorted(per_relation.items())},
        surface_forms={
            "distinct": len({f for v in forms.values() for f in v}),
            "per_path_mean": round(sum(counts) / len(counts), 3),
            "per_path_max": max(counts),
            "signed_paths": len(forms),
        },
        examples=[r["question"] for r in records[:5]],
    )


class Neighbourhoods:
    """The full adjacency of the entities walked so far, read on demand in batches.

    ``adj[id][step]`` lists the entities one ``step`` away (sorted); an id in ``hubs`` has more
    than :data:`WALK_MAX_DEGREE` relationships and was not read.
    """

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self.adj: dict[str, dict[Step, tuple[str, ...]]] = {}
        self.hubs: set[str] = set()
        self.names: dict[str, str] = {}
        self.types: dict[str, str | None] = {}
        self.degrees: dict[str, int] = {}

    def fetch(self, ids: Iterable[str]) -> None:
        missing = sorted(set(ids) - self.adj.keys() - self.hubs)
        for start in range(0, len(missing), FETCH_BATCH):
            chunk = missing[start : start + FETCH_BATCH]
            found: dict[str, dict[Step, set[str]]] = {}
            params = {"ids": chunk, "max_degree": WALK_MAX_DEGREE}
            for row in self._store.run(queries.get("entities_neighbours"), params):
                near, far, steps = row["id"], row["far_id"], found.setdefault(row["id"], {})
                if row["head_id"] == near:
                    steps.setdefault(Step(row["r_type"], True), set()).add(far)
                if row["head_id"] != near or far == near:
                    steps.setdefault(Step(row["r_type"], False), set()).add(far)
                self.names[far] = row["far_name"]
                far_type = row["far_type"]
                self.types[far] = None if not far_type or far_type in RESERVED_LABELS else far_type
                self.degrees[far] = row["far_degree"]
            for near in chunk:
                if near in found:
                    self.adj[near] = {
                        s: tuple(sorted(v)) for s, v in sorted(found[near].items(), key=_step_key)
                    }
                else:
                    self.hubs.add(near)

    def walk(
        self, topic: str, steps: Sequence[Step], *, last_cap: int = MAX_ANSWERS
    ) -> list[frozenset[str]] | None:
        """The entities reached after each step by all walks of ``steps`` from ``topic`` that
        never come back to it, or None where a walk crosses a hub, a step reaches nothing, or
        reaches more than :data:`MAX_FRONTIER` entities (``last_cap`` after the last step)."""
        frontier: frozenset[str] = frozenset((topic,))
        reached = []
        for i, step in enumerate(steps):
            self.fetch(frontier)
            if frontier & self.hubs:
                return None
            nxt = {far for near in frontier for far in self.adj[near].get(step, ())} - {topic}
            if not nxt or len(nxt) > (last_cap if i == len(steps) - 1 else MAX_FRONTIER):
                return None
            frontier = frozenset(nxt)
            reached.append(frontier)
        return reached

    def options(self, frontier: Iterable[str]) -> list[Step]:
        """The steps some entity of ``frontier`` can take, sorted."""
        self.fetch(frontier)
        found = {s for near in frontier if near in self.adj for s in self.adj[near]}
        return sorted(found, key=_step_key)


def _step_key(item: Any) -> tuple[str, bool]:
    step = item[0] if isinstance(item, tuple) else item
    return (step.relation, step.forward)


def named(name: str | None) -> bool:
    """Whether ``name`` is words a question can say (not empty, not a machine id such as ``m.0abc12``)."""
    return bool(name and name.strip()) and not _MACHINE_ID.match(name or "")


def _stratified(candidates: Sequence[str], graph: Neighbourhoods, rng: random.Random) -> list[str]:
    """``candidates`` (in their seeded order) taken in turn from strata of (rarest incident
    relation type among the candidates, degree band), so the first ones spread over both."""
    graph.fetch(candidates)
    walkable = [c for c in candidates if c in graph.adj and graph.adj[c]]
    frequency = Counter(s.relation for c in walkable for s in graph.adj[c])
    strata: dict[tuple[str, int], list[str]] = {}
    for c in walkable:
        rarest = min((frequency[s.relation], s.relation) for s in graph.adj[c])[1]
        degree = sum(len(v) for v in graph.adj[c].values())
        strata.setdefault((rarest, int(math.log2(degree))), []).append(c)
    queues = [strata[k] for k in sorted(strata)]
    rng.shuffle(queues)
    order = []
    for i in range(max((len(q) for q in queues), default=0)):
        order += [q[i] for q in queues if i < len(q)]
    return order


def _pick(options: Sequence[Step], used: Counter[str], rng: random.Random) -> Step:
    """A step, relation types used less so far more likely."""
    weights = [1.0 / (1 + used[s.relation]) for s in options]
    return rng.choices(options, weights=weights)[0]


def _path_question(
    graph: Neighbourhoods,
    topic: str,
    length: int,
    rng: random.Random,
    used: Counter[str],
    sources: dict[str, str],
) -> tuple[tuple[Any, ...], GraphQuestion] | None:
    """A path of ``length`` steps from ``topic`` (else shorter), :data:`TRIES` random walks per length."""
    for wanted in range(length, 0, -1):
        for _ in range(TRIES):
            walked = _random_path(graph, topic, wanted, rng, used)
            if walked is not None:
                return _path_record(graph, topic, *walked, rng, sources)
    return None


def _random_path(
    graph: Neighbourhoods, topic: str, length: int, rng: random.Random, used: Counter[str]
) -> tuple[list[Step], list[frozenset[str]]] | None:
    """Steps picked one at a time among those the current ends can take, and what each reaches;
    None where the walk fails (:meth:`Neighbourhoods.walk`) or ends at a nameless node."""
    steps: list[Step] = []
    reached: list[frozenset[str]] = []
    for _ in range(length):
        options = graph.options(reached[-1] if reached else (topic,))
        if not options:
            return None
        steps.append(_pick(options, used, rng))
        walked = graph.walk(topic, steps)
        if walked is None:
            return None
        reached = walked
    if not all(named(graph.names.get(a)) for a in reached[-1]):
        return None
    return steps, reached


def _path_record(
    graph: Neighbourhoods,
    topic: str,
    steps: list[Step],
    reached: list[frozenset[str]],
    rng: random.Random,
    sources: dict[str, str],
) -> tuple[tuple[Any, ...], GraphQuestion]:
    names = [sources.get(s.relation, s.relation) for s in steps]
    types = [_shared_type(graph, frontier) for frontier in reached]
    worded = word_path(
        graph.names[topic], steps, [relation_words(n) for n in names], types, [len(f) for f in reached], rng
    )
    return (topic, tuple(steps)), _question(
        graph, (topic,), (tuple(steps),), (tuple(names),), reached[-1], worded
    )


def _conjunction(
    graph: Neighbourhoods, middle: str, rng: random.Random, sources: dict[str, str]
) -> tuple[tuple[Any, ...], GraphQuestion] | None:
    """A two-topic question around ``middle``: two of its named neighbours become the topics, and
    the answers are what one step back from each reaches alike (``middle`` among them), where
    each step alone reaches more."""
    graph.fetch((middle,))
    pairs = sorted(
        (
            (step, far)
            for step, fars in graph.adj.get(middle, {}).items()
            for far in fars
            if far != middle
            and named(graph.names.get(far))
            and graph.degrees.get(far, WALK_MAX_DEGREE + 1) <= TOPIC_MAX_DEGREE
        ),
        key=lambda p: (p[0].relation, p[0].forward, p[1]),
    )
    rng.shuffle(pairs)
    reached = []
    for back, topic in pairs[: 2 * TRIES]:
        step = Step(back.relation, not back.forward)
        # Each step alone may reach more than MAX_ANSWERS: the other narrows it down.
        walked = graph.walk(topic, [step], last_cap=MAX_FRONTIER)
        if walked is not None and len(walked[0]) > 1:  # one end leaves nothing to narrow down
            reached.append((topic, step, walked[0]))
    for (topic, first, ends), (other, second, other_ends) in itertools.combinations(reached, 2):
        answers = (ends & other_ends) - {topic, other}
        if (
            topic != other
            and 0 < len(answers) <= MAX_ANSWERS
            and answers not in (ends, other_ends)  # each topic must narrow the other down
            and all(named(graph.names.get(a)) for a in answers)
        ):
            return _conjunction_record(graph, (topic, other), (first, second), answers, rng, sources)
    return None


def _conjunction_record(
    graph: Neighbourhoods,
    topics: tuple[str, str],
    steps: tuple[Step, Step],
    answers: frozenset[str],
    rng: random.Random,
    sources: dict[str, str],
) -> tuple[tuple[Any, ...], GraphQuestion]:
    names = tuple(sources.get(s.relation, s.relation) for s in steps)
    words = [relation_words(n) for n in names]
    worded = word_conjunction(
        [graph.names[t] for t in topics], steps, words, _shared_type(graph, answers), rng
    )
    key = ("and", *sorted(zip(topics, steps, strict=True), key=lambda p: (p[0], _step_key(p[1]))))
    paths = tuple((s,) for s in steps)
    return key, _question(graph, topics, paths, tuple((n,) for n in names), answers, worded)


def _question(
    graph: Neighbourhoods,
    topics: tuple[str, ...],
    steps: tuple[tuple[Step, ...], ...],
    relation_paths: tuple[tuple[str, ...], ...],
    answers: frozenset[str],
    worded: Worded,
) -> GraphQuestion:
    ordered = tuple(sorted(answers))
    example = QAExample(
        qid="graph:?",
        question=worded.text,
        topic_ids=topics,
        answers=ordered,
        line=0,
        relation_paths=relation_paths,
    )
    return GraphQuestion(example, steps, tuple(graph.names[a] for a in ordered), worded.form)


def _shared_type(graph: Neighbourhoods, entities: Iterable[str]) -> str | None:
    found = {graph.types.get(e) for e in entities}
    return found.pop() if len(found) == 1 else None


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL question file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
