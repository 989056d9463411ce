"""Questions generated from the graph (``kgqa train --from-graph``): deterministic for a seed,
and every answer set exactly what the graph gives (checked against a brute-force walk over the
source triples)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from ingest.embedding import embed_store
from ingest.loader import load
from ingest.readers.metaqa import read_metaqa
from kgqa.eval.datasets import read_questions
from kgqa.names import relationship_type
from kgqa.store.kglite_store import KgliteStore
from kgqa.types import TripleRecord
from retriever_training.from_graph import MAX_ANSWERS, generate_questions, graph_questions_file
from retriever_training.path_wording import Step, relation_words
from tests.conftest import FakeEmbedder

REPO = Path(__file__).resolve().parents[2]
SLICE = REPO / "examples" / "metaqa_movies" / "kb.txt"

#: A Freebase-like graph: marriages are nameless CVT nodes between two people.
CVT_TRIPLES = [
    ("Richard Nixon", "people.person.spouse_s", "m.0j4k1"),
    ("m.0j4k1", "people.marriage.spouse", "Pat Nixon"),
    ("Richard Nixon", "people.person.place_of_birth", "Yorba Linda"),
    ("Pat Nixon", "people.person.place_of_birth", "Ely"),
    ("Julie Nixon", "people.person.parents", "Richard Nixon"),
    ("Julie Nixon", "people.person.parents", "Pat Nixon"),
]


@pytest.fixture(scope="module")
def movies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KgliteStore]:
    """The bundled MetaQA slice, loaded (embeddings hashed: generation never reads them)."""
    with KgliteStore(tmp_path_factory.mktemp("slice") / "graph.kgl") as store:
        load(store, read_metaqa(SLICE), source=str(SLICE), fmt="metaqa", source_key="slice")
        embed_store(store, FakeEmbedder())
        yield store


def _brute_force(triples: Sequence[tuple[str, str, str]], topic: str, steps: Sequence[Step]) -> set[str]:
    """The ends of every walk of ``steps`` from ``topic`` that never comes back to it."""
    frontier = {topic}
    for step in steps:
        nxt = set()
        for h, r, t in triples:
            if relationship_type(r) != step.relation:
                continue
            if step.forward and h in frontier:
                nxt.add(t)
            if not step.forward and t in frontier:
                nxt.add(h)
        frontier = nxt - {topic}
    return frontier


def test_generate_questions_gives_exactly_the_graphs_answers(movies: KgliteStore) -> None:
    triples = [(r.head, r.relation, r.tail) for r in read_metaqa(SLICE) if isinstance(r, TripleRecord)]
    questions = generate_questions(movies, count=150, seed=3)
    assert len(questions) == 150
    assert {len(q.steps[0]) for q in questions if len(q.steps) == 1} == {1, 2, 3}
    assert any(len(q.steps) == 2 for q in questions), "some two-topic conjunctions"
    for q in questions:
        ex = q.example
        reached = [_brute_force(triples, t, s) for t, s in zip(ex.topic_ids, q.steps, strict=True)]
        gold = set.intersection(*reached) - set(ex.topic_ids)
        assert set(ex.answers) == gold, ex.question
        assert 1 <= len(gold) <= MAX_ANSWERS
        assert all(t in ex.question for t in ex.topic_ids)
        assert ex.relation_paths == tuple(tuple(m for m in p) for p in ex.relation_paths)
        assert [relationship_type(r) for p in ex.relation_paths for r in p] == [
            s.relation for path in q.steps for s in path
        ]


def test_generate_questions_is_deterministic_for_a_seed(movies: KgliteStore) -> None:
    first = generate_questions(movies, count=40, seed=7)
    assert first == generate_questions(movies, count=40, seed=7)
    assert [q.example.question for q in first] != [
        q.example.question for q in generate_questions(movies, count=40, seed=8)
    ]


def test_generate_questions_same_under_another_hash_seed(movies: KgliteStore, tmp_path: Path) -> None:
    """Set iteration order changes with PYTHONHASHSEED; the questions must not."""
    script = (
        "import json, sys\n"
        "from ingest.loader import load\n"
        "from ingest.readers.metaqa import read_metaqa\n"
        "from kgqa.store.kglite_store import KgliteStore\n"
        "from retriever_training.from_graph import generate_questions\n"
        "with KgliteStore(sys.argv[2]) as s:\n"
        "    load(s, read_metaqa(sys.argv[1]), source=sys.argv[1], fmt='metaqa', source_key='slice')\n"
        "    print(json.dumps([q.to_record() for q in generate_questions(s, count=40, seed=7)]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(SLICE), str(tmp_path / "g.kgl")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=REPO,
    )
    other = json.loads(proc.stdout.strip().splitlines()[-1])
    assert other == [q.to_record() for q in generate_questions(movies, count=40, seed=7)]


def test_graph_questions_file_is_read_back_and_reused(movies: KgliteStore, tmp_path: Path) -> None:
    report = graph_questions_file(movies, tmp_path, count=30, seed=0)
    assert not report.cached and report.questions == 30
    assert Path(report.path).parent == tmp_path / "from-graph"
    assert sum(report.by_length.values()) == 30 and report.paths_per_relation
    read = list(read_questions(Path(report.path), "rog-jsonl"))
    generated = [q.example for q in generate_questions(movies, count=30, seed=0)]
    assert [(e.qid, e.question, e.topic_ids, e.answers, e.relation_paths) for e in read] == [
        (e.qid, e.question, e.topic_ids, e.answers, e.relation_paths) for e in generated
    ]
    again = graph_questions_file(movies, tmp_path, count=30, seed=0)
    assert again.cached and again.path == report.path and again.by_length == report.by_length
    assert graph_questions_file(movies, tmp_path, count=30, seed=1).path != report.path


def test_generate_questions_walks_through_nameless_nodes_but_never_ends_there(tmp_path: Path) -> None:
    with KgliteStore(tmp_path / "graph.kgl") as store:
        load(
            store,
            [TripleRecord(*t, line=i + 1) for i, t in enumerate(CVT_TRIPLES)],
            source="cvt",
            fmt="test",
            source_key="cvt",
        )
        questions = generate_questions(store, count=40, seed=0)
    assert questions
    ends = {a for q in questions for a in q.example.answers} | {
        t for q in questions for t in q.example.topic_ids
    }
    assert "m.0j4k1" not in ends
    through = [q for q in questions if q.example.relation_paths[0][:1] == ("people.person.spouse_s",)]
    assert through and all(len(q.steps[0]) >= 2 for q in through)
    assert all("spouse s" in q.example.question for q in through)


def test_relation_words_reads_the_last_part_of_a_dotted_name() -> None:
    assert relation_words("people.person.place_of_birth") == "place of birth"
    assert relation_words("directed_by") == "directed by"
