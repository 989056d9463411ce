"""Refined supervision (``kgqa refine``): candidate paths, the planner judge (hard EM) and the LLM
judge (ReG's prompt, its on-disk cache) end to end on a toy KG whose shortest paths mislead.

In the toy KG every other film was written by its own director, so "who directed Film 4" has two
shortest paths to its answer, DIRECTED_BY and WRITTEN_BY, and raw shortest-path labels would
teach the coincidental one too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from conftest import GEMMA_SETTINGS, FakeEmbedder
from llm_fakes import ChatServer, Step

from kgqa.config import ReaderSettings
from kgqa.errors import KgqaError, LLMUnavailableError
from kgqa.eval.datasets import read_questions, write_rog_jsonl
from kgqa.reasoning.judgement_cache import JudgementCache
from kgqa.reasoning.path_judge import PathJudge, format_chain, judge_messages, parse_selection
from kgqa.reasoning.readers import make_llm_client
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.labels import relation_path_labels, shortest_path_labels
from kgqa.store.kglite_store import KgliteStore
from kgqa.types import QAExample, TripleRecord
from retriever_training.candidates import candidate_paths
from retriever_training.examples import TrainingExample, build_examples
from retriever_training.refine import (
    PlannerRefineSettings,
    candidate_pools,
    judged_examples,
    neighbour_prior,
    refine_with_llm,
    refine_with_planner,
    refined_questions,
    relation_source_names,
    text_prior,
    verbalised_path,
)
from retriever_training.train import TrainSettings

FILMS = 24


def _triples() -> list[tuple[str, str, str]]:
    out = []
    for i in range(FILMS):
        film, director = f"Film {i}", f"Director {i % 6}"
        writer = director if i % 2 == 0 else f"Writer {i % 5}"
        out += [
            (film, "directed_by", director),
            (film, "written_by", writer),
            (film, "release_year", str(1990 + i)),
        ]
    return out


def _questions() -> list[QAExample]:
    questions = []
    for i, (film, relation, person) in enumerate(t for t in _triples() if t[1] != "release_year"):
        text = f"who directed {film}" if relation == "directed_by" else f"who wrote {film}"
        questions.append(
            QAExample(f"toy:{i}", text, (film,), (person,), line=i, relation_paths=((relation,),))
        )
    return questions


Prepared = tuple[list[TrainingExample], tuple[EntityTable, RelationTable], dict[str, str]]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prepared]:
    from ingest.embedding import embed_store
    from ingest.loader import load

    embedder = FakeEmbedder(dimension=32)
    with KgliteStore(tmp_path_factory.mktemp("refine") / "graph.kgl") as store:
        records = [TripleRecord(h, r, t, line=i + 1) for i, (h, r, t) in enumerate(_triples())]
        load(store, records, source="toy", fmt="test", source_key="toy")
        embed_store(store, embedder)
        tables = (EntityTable(store, embedder.dimension), RelationTable(store))
        examples = build_examples(
            store, embedder, _questions(), tables, SubgraphSettings(hops=1), gold_paths=False
        )
        yield examples, tables, relation_source_names(store)


def test_build_examples_without_gold_paths_labels_every_shortest_path(prepared: Prepared) -> None:
    examples, _, _ = prepared
    assert all(not ex.example.relation_paths for ex in examples)
    ex = examples[0]  # who directed Film 0: its director also wrote it
    assert ex.labels.equal(shortest_path_labels(ex.prepared.subgraph, ex.example.answers))
    assert int(ex.labels.sum()) == 2


def test_candidate_paths_hold_the_gold_path_and_the_distractor(prepared: Prepared) -> None:
    examples, tables, source_of = prepared
    # no walk back through a film adds a candidate: every question is judged "never back"
    assert not any(ex.prepared.subgraph.topic_walks for ex in judged_examples(examples, tables, source_of)[0])
    pools = candidate_pools(examples)
    by_text = {ex.example.question: pool for ex, pool in zip(examples, pools, strict=True)}
    assert {c.relations for c in by_text["who directed Film 0"]} == {("DIRECTED_BY",), ("WRITTEN_BY",)}
    assert {c.relations for c in by_text["who directed Film 1"]} == {("DIRECTED_BY",)}
    assert all(c.fit == 1.0 for c in by_text["who directed Film 0"])  # one answer, reached by both
    walk = by_text["who directed Film 0"][0].walk
    sub = examples[0].prepared.subgraph
    assert [sub.entity_ids[e] for e in walk] == ["Film 0", "Director 0"]


def test_wider_pool_holds_the_asked_path_behind_a_shortcut() -> None:
    # "X's parent's child's nationality": X shares the nationality, so the shortest walk is one
    # NATIONALITY step; the asked three-step walk is a candidate only in the wider pool.
    entities = ["X", "France", "Parent", "Sibling"]
    triples = [(0, 0, 1), (0, 1, 2), (2, 2, 3), (3, 0, 1)]  # nationality, parents, children
    head, rel, tail = (torch.tensor(col) for col in zip(*triples, strict=True))
    sub = Subgraph(entities, ["NATIONALITY", "PARENTS", "CHILDREN"], head, rel, tail, ["e"] * 4, 1)
    answers = torch.tensor([False, True, False, False])
    shortest = {c.relations for c in candidate_paths(sub, answers, 3)}
    wide = {c.relations: c for c in candidate_paths(sub, answers, 3, extra_steps=2)}
    asked = ("PARENTS", "CHILDREN", "NATIONALITY")
    assert shortest == {("NATIONALITY",)}
    assert asked in wide and ("NATIONALITY",) in wide
    assert all(c.fit == 1.0 for c in wide.values())  # each reaches France and nothing else
    assert [entities[e] for e in wide[asked].walk] == ["X", "Parent", "Sibling", "France"]
    assert {c.relations for c in candidate_paths(sub, answers, 3, extra_steps=1)} == shortest


def test_walk_back_through_the_topic_is_a_candidate_only_under_the_permissive_rule() -> None:
    # "X's parent's child's parent" for an only child X: the asked walk comes back through X, so
    # under "never back" the pool holds only the one-step shortcuts (PARENTS, CHILDREN backwards).
    entities = ["X", "Parent"]
    head, rel, tail = torch.tensor([0, 1]), torch.tensor([0, 1]), torch.tensor([1, 0])  # parents, children
    never_back = Subgraph(entities, ["PARENTS", "CHILDREN"], head, rel, tail, ["e"] * 2, 1)
    answers = torch.tensor([False, True])
    asked = ("PARENTS", "CHILDREN", "PARENTS")
    shortcuts = {("PARENTS",), ("CHILDREN",)}
    assert {c.relations for c in candidate_paths(never_back, answers, 3, extra_steps=2)} == shortcuts
    back = replace(never_back, topic_walks=True)
    pool = {c.relations: c for c in candidate_paths(back, answers, 3, extra_steps=2)}
    assert asked in pool and shortcuts < set(pool)
    assert [entities[e] for e in pool[asked].walk] == ["X", "Parent", "X", "Parent"]
    # the topic answers only under the permissive rule ("who is X's parent's child")
    itself = torch.tensor([True, False])
    assert candidate_paths(never_back, itself, 2) == []
    assert ("PARENTS", "CHILDREN") in {c.relations for c in candidate_paths(back, itself, 2)}


def test_neighbour_prior_alone_recovers_the_gold_paths(prepared: Prepared) -> None:
    # Questions phrased alike ("who directed ...") share the asked path; the writer-director
    # coincidence is a candidate of only half of them. No planner is trained (rounds=0).
    examples, tables, source_of = prepared
    pools = candidate_pools(examples)
    prior = neighbour_prior(examples, pools, neighbours=10)
    by_text = {ex.example.question: (pool, p) for ex, pool, p in zip(examples, pools, prior, strict=True)}
    pool, p = by_text["who directed Film 0"]
    assert p[[c.relations for c in pool].index(("DIRECTED_BY",))] > p.min() + 1.0
    settings = PlannerRefineSettings(rounds=0, prior=1.0, neighbours=10, text=0.0)
    kept, history = refine_with_planner(examples, pools, tables, source_of, settings)
    refined = refined_questions(_questions(), examples, pools, kept, source_of)
    assert [q.relation_paths for q in refined] == [q.relation_paths for q in _questions()]
    assert history == []


def test_neighbour_prior_is_the_same_computed_in_row_blocks(
    prepared: Prepared, monkeypatch: pytest.MonkeyPatch
) -> None:
    import retriever_training.refine as refine

    examples, _, _ = prepared
    pools = candidate_pools(examples)
    whole = neighbour_prior(examples, pools, neighbours=10)
    monkeypatch.setattr(refine, "_SIMILARITY_ROWS", 7)
    blocks = neighbour_prior(examples, pools, neighbours=10)
    assert all(torch.allclose(a, b) for a, b in zip(whole, blocks, strict=True))


def test_verbalised_path_splits_names_and_marks_inverse_steps() -> None:
    source_of = {"DIRECTED_BY": "directed_by", "PLACE_OF_BIRTH": "placeOfBirth", "GENRE": "film.film.genre"}
    assert verbalised_path(("DIRECTED_BY",), (1,), source_of) == "inverse directed by"
    assert verbalised_path(("PLACE_OF_BIRTH", "GENRE"), (0, 2), source_of) == "place of birth film film genre"


def test_text_prior_prefers_the_relation_the_question_names(prepared: Prepared) -> None:
    # "who directed Film 0": the director also wrote it, so both paths reach the answer; only
    # the word "directed" (the topic's name cut out) tells them apart.
    examples, tables, source_of = prepared
    pools = candidate_pools(examples)
    cosine = text_prior(examples, pools, FakeEmbedder(dimension=32), tables[0].names, source_of)
    directed = 0
    for ex, pool, c in zip(examples, pools, cosine, strict=True):
        if ex.example.question.startswith("who directed") and len(pool) == 2:
            relations = [p.relations for p in pool]
            assert c[relations.index(("DIRECTED_BY",))] > c[relations.index(("WRITTEN_BY",))]
            directed += 1
    assert directed == FILMS // 2
    # In the judge's score it alone (no planner, no neighbour prior) drops the coincidence.
    settings = PlannerRefineSettings(rounds=0, prior=0.0, text=10.0)
    kept, _ = refine_with_planner(
        examples, pools, tables, source_of, settings, embedder=FakeEmbedder(dimension=32)
    )
    refined = refined_questions(_questions(), examples, pools, kept, source_of)
    for q, gold in zip(refined, _questions(), strict=True):
        if q.question.startswith("who directed"):
            assert q.relation_paths == gold.relation_paths == (("directed_by",),)
    with pytest.raises(ValueError, match="embedder"):
        refine_with_planner(examples, pools, tables, source_of, PlannerRefineSettings(rounds=0, text=1.0))


@pytest.mark.parametrize(("folds", "ensemble"), [(1, 1), (2, 1), (1, 2)])
def test_planner_judge_recovers_the_gold_paths(
    prepared: Prepared, tmp_path: Path, folds: int, ensemble: int
) -> None:
    examples, tables, source_of = prepared
    pools = candidate_pools(examples)
    settings = PlannerRefineSettings(
        rounds=2,
        margin=1.0,
        folds=folds,
        text=0.0,
        ensemble=ensemble,
        train=TrainSettings(epochs=30, patience=30, seed=0),
    )
    kept, history = refine_with_planner(examples, pools, tables, source_of, settings)
    gold = [q.relation_paths for q in _questions()]
    refined = refined_questions(_questions(), examples, pools, kept, source_of)
    assert [q.relation_paths for q in refined] == gold  # every distractor dropped, no gold lost
    assert len(history) == 2 and history[-1]["kept"] == len(examples)
    # The refined file reads back as rog-jsonl and labels exactly the gold walks.
    out = tmp_path / "refined.jsonl"
    write_rog_jsonl(out, refined)
    back = list(read_questions(out, "rog-jsonl"))
    assert [q.relation_paths for q in back] == gold
    ex = examples[0]
    labels = relation_path_labels(ex.prepared.subgraph, back[0].answers, back[0].relation_paths)
    assert int(labels.sum()) == 1


# --------------------------------------------------------------------------- the LLM judge


def test_parse_selection_reads_the_last_answer_line() -> None:
    assert parse_selection("Explanation: ...\nans: 2, 1, 2", 3) == (1, 0)
    assert parse_selection("ans: 1\n**ans**: 3", 3) == (2,)
    assert parse_selection("Selected paths: 1\n**Selected:** 3", 3) == (2,)
    assert parse_selection("ans: none", 3) == ()
    assert parse_selection("I pick path 1", 3) is None
    assert parse_selection("ans: 7", 3) is None


def test_judge_prompt_shows_directional_chains_after_a_demonstration() -> None:
    chain = format_chain(
        ["Nora Ephron", "Julie & Julia", "2009"], ["written_by", "release_year"], [True, False]
    )
    assert chain == "Nora Ephron <-[written_by]- Julie & Julia -[release_year]-> 2009"
    messages = judge_messages("who directed Film 0", ["Film 0 -[directed_by]-> Director 0"])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"].endswith("ans: 1, 3")
    assert "1. Film 0 -[directed_by]-> Director 0" in messages[3]["content"]


def _judge(url: str, cache: Path) -> PathJudge:
    settings = ReaderSettings(
        backend="openai",
        model="judge",
        base_url=url,
        concurrency=3,
        max_retries=1,
        retry_backoff_s=0.0,
        timeout_s=5.0,
    )
    return PathJudge(make_llm_client(settings), settings, JudgementCache(cache))


def test_llm_judge_against_a_local_server_caches_and_resumes(prepared: Prepared, tmp_path: Path) -> None:
    examples, tables, source_of = prepared
    pools = candidate_pools(examples)
    asked = sum(len(p) >= 2 for p in pools)
    cache = tmp_path / "judgements.jsonl"
    with ChatServer() as server:
        server.script = [Step(text="Explanation: the relation the question names.\nans: 1")] * asked
        kept, counts = refine_with_llm(examples, pools, _judge(server.url, cache), tables[0].names, source_of)
        assert len(server.requests) == asked == counts["judged"] and counts["from_cache"] == 0
        assert all(k == [0] for k, p in zip(kept, pools, strict=True) if len(p) >= 2)
        prompt = server.requests[0]["body"]["messages"][-1]["content"]
        assert "Question: who directed Film 0" in prompt and "-[written_by]->" in prompt
        # A re-run asks nothing.
        again, counts = refine_with_llm(
            examples, pools, _judge(server.url, cache), tables[0].names, source_of
        )
        assert len(server.requests) == asked and again == kept and counts["from_cache"] == asked
        # A run killed halfway (half the cache, a torn last line) asks only what is missing.
        lines = cache.read_text().splitlines()
        cache.write_text("\n".join(lines[: asked // 2]) + "\n" + lines[asked // 2][:20])
        server.script = [Step(text="ans: 1")] * asked
        resumed, counts = refine_with_llm(
            examples, pools, _judge(server.url, cache), tables[0].names, source_of
        )
        assert len(server.requests) == asked + (asked - asked // 2) and resumed == kept
        assert len(JudgementCache(cache)) == asked


def test_llm_judge_refuses_when_the_endpoint_is_down(prepared: Prepared, tmp_path: Path) -> None:
    examples, tables, source_of = prepared
    pools = candidate_pools(examples)
    with ChatServer() as server:
        url = server.url
    with pytest.raises(LLMUnavailableError) as error:
        refine_with_llm(examples, pools, _judge(url, tmp_path / "j.jsonl"), tables[0].names, source_of)
    assert isinstance(error.value, KgqaError) and url.split("/v1")[0] in str(error.value)


def test_llm_judge_stops_after_caching_what_it_got_when_the_server_fails(
    prepared: Prepared, tmp_path: Path
) -> None:
    examples, tables, source_of = prepared
    pools = candidate_pools(examples)
    cache = tmp_path / "j.jsonl"
    with ChatServer() as server:
        server.script = [Step(text="ans: 2")] + [Step(status=503)] * 200
        with pytest.raises(LLMUnavailableError):
            refine_with_llm(examples, pools, _judge(server.url, cache), tables[0].names, source_of)
    assert len(JudgementCache(cache)) >= 1
    assert json.loads(cache.read_text().splitlines()[0])["reply"] == "ans: 2"


def test_llm_judge_with_the_bundled_gemma_in_process(prepared: Prepared, tmp_path: Path) -> None:
    try:
        client = make_llm_client(GEMMA_SETTINGS)
    except ImportError as exc:  # BackendNotInstalledError is one
        pytest.skip(f"bundled Gemma not installed: {exc}")
    examples, tables, source_of = prepared
    pools = candidate_pools(examples)
    few = [i for i, p in enumerate(pools) if len(p) >= 2][:2]
    settings = GEMMA_SETTINGS.model_copy(update={"max_new_tokens": 48, "concurrency": 1})
    judge = PathJudge(client, settings, JudgementCache(tmp_path / "gemma.jsonl"))
    kept, counts = refine_with_llm(
        [examples[i] for i in few], [pools[i] for i in few], judge, tables[0].names, source_of
    )
    assert counts["judged"] == 2 and counts["from_cache"] == 0
    assert counts["format_failures"] == 0  # the backend primes "ans:", the judge's answer marker
    assert all(set(k) <= {0, 1} for k in kept)  # whatever it chose, only real candidates
    assert len(JudgementCache(tmp_path / "gemma.jsonl")) == 2
    again, counts = refine_with_llm(
        [examples[i] for i in few], [pools[i] for i in few], judge, tables[0].names, source_of
    )
    assert again == kept and counts["from_cache"] == 2
