"""Train -> retrieve -> read -> evaluate, end to end on the toy KG in a real embedded store."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import torch
from conftest import QUESTIONS, toy_examples

from kgqa.config import AnswerSettings
from kgqa.eval.run import answer_records, evaluate
from kgqa.pipeline import Asker
from kgqa.reasoning.extractive import ExtractiveReader
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.retriever import Retriever
from kgqa.store.kglite_store import KgliteStore
from kgqa.types import QAExample
from retriever_training.examples import build_examples
from retriever_training.train import TrainSettings, train_scorer


def test_training_is_deterministic_for_a_seed(toy_kg: KgliteStore, fake_embedder) -> None:  # type: ignore[no-untyped-def]
    tables = (EntityTable(toy_kg, fake_embedder.dimension), RelationTable(toy_kg))
    examples = build_examples(toy_kg, fake_embedder, toy_examples(), tables, SubgraphSettings(hops=2))
    settings = TrainSettings(epochs=3, patience=3, scorer_hidden=16, seed=3)
    a, _ = train_scorer(examples, examples, tables, settings, progress=False)
    b, _ = train_scorer(examples, examples, tables, settings, progress=False)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(x, y), name


def test_retriever_ranks_the_answer_path_first_and_reads_the_answer(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    result = trained.retrieve("who directed [Jaws]")
    assert [t.id for t in result.topics] == ["Jaws"]
    top = [(t.head, t.relation, t.tail) for t in result.top(2)]
    assert ("Jaws", "DIRECTED_BY", "Steven Spielberg") in top  # the one shortest-path triple
    assert set(result.timings_ms) >= {"link", "extract", "dde", "score"}
    answers = extractive.extract_answers(result)
    assert answers[0].id == "Steven Spielberg"
    assert ("Jaws", "DIRECTED_BY", "Steven Spielberg") in [
        (t.head, t.relation, t.tail) for t in answers[0].support
    ]


@pytest.mark.gpu
def test_models_on_cuda_retrieve_and_read_what_they_do_on_the_cpu(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    """``runtime.device`` moves the scorers, planner and reader; the store and Cypher stay put.
    On CUDA the questions go as one batch (``retrieve_many``, the reader's batched pass), on the
    CPU one at a time."""
    from kgqa.retrieval.retriever import RetrievalRequest

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")

    def on_cuda(model: torch.nn.Module | None) -> torch.nn.Module | None:
        return None if model is None else copy.deepcopy(model).to("cuda")

    retriever = Retriever(
        trained.store,
        trained.embedder,
        on_cuda(trained.scorer),  # type: ignore[arg-type]
        path_scorer=on_cuda(trained.path_scorer),  # type: ignore[arg-type]
        planner=on_cuda(trained.planner),  # type: ignore[arg-type]
        subgraph=trained.subgraph,
    )
    reader = ExtractiveReader(on_cuda(extractive.model), retriever.tables)  # type: ignore[arg-type]
    together = retriever.retrieve_many([RetrievalRequest(q) for q, _, _ in QUESTIONS], threads=2)
    batch = [r for r in together if not isinstance(r, Exception)]
    assert len(batch) == len(QUESTIONS)
    for (question, _, _), cuda, rated in zip(
        QUESTIONS, batch, reader.entity_probabilities_many(batch), strict=True
    ):
        cpu = trained.retrieve(question)
        # by key, not by rank: ties may break the other way with CUDA's sums
        cpu_scores = {t.key: t.score for t in cpu.top(10_000)}
        assert {t.key: t.score for t in cuda.top(10_000)} == pytest.approx(cpu_scores, abs=1e-4), question
        cpu_answers = {a.id: a.score for a in extractive.extract_answers(cpu)}
        cuda_answers = {a.id: a.score for a in reader.extract_answers(cuda, probabilities=rated)}
        assert cuda_answers == pytest.approx(cpu_answers, abs=1e-4), question


def test_retrieval_ranks_by_path_rescored_probabilities_when_asked(trained: Retriever) -> None:
    from kgqa.retrieval.evidence.path_pooling import path_rescore

    question = "who directed the films starring [Tom Hanks]"
    plain = Retriever(
        trained.store, trained.embedder, trained.scorer, path_scorer=trained.path_scorer, rescoring="none"
    ).retrieve(question)
    torch.testing.assert_close(plain.scores, plain.probabilities)
    rescoring = Retriever(
        trained.store, trained.embedder, trained.scorer, path_scorer=trained.path_scorer, rescoring="path"
    )
    result = rescoring.retrieve(question)
    sub = result.prepared.subgraph
    expected = path_rescore(result.probabilities, sub.head, sub.tail, sub.topic, sub.num_entities)
    torch.testing.assert_close(result.scores, expected)
    assert not torch.equal(result.scores, result.probabilities)  # a 2-hop question: second hops move
    torch.testing.assert_close(result.probabilities, plain.probabilities)
    assert "rescore" in result.timings_ms


def test_retrieval_probabilities_come_from_the_second_pass_over_the_first(trained: Retriever) -> None:
    from kgqa.retrieval.models.path_context import PATH_CONTEXT_DIM, triple_probabilities

    assert trained.path_scorer is not None
    assert trained.path_scorer.config.dde_dim == trained.scorer.config.dde_dim + PATH_CONTEXT_DIM
    result = trained.retrieve("who directed the films starring [Tom Hanks]")
    first = triple_probabilities(result.prepared, trained.tables, trained.scorer)
    both = triple_probabilities(result.prepared, trained.tables, trained.scorer, trained.path_scorer)
    torch.testing.assert_close(result.probabilities, both)
    assert not torch.allclose(first, both)


def test_the_planner_rates_the_asked_relation_first_and_feeds_the_reader(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    assert trained.planner is not None and extractive.model is not None
    result = trained.retrieve("when was [Cast Away] released")
    assert result.plans is not None and "plan" in result.timings_ms
    best = result.to_dict()["plans"][0]
    assert best["steps"] == ["RELEASE_YEAR->"]
    sub = result.prepared.subgraph
    reach = result.plans.reach(sub.num_entities)
    year = sub.entity_ids.index("2000")
    assert reach[year, 0] == reach[:, 0].max()  # the answer ends the likeliest plan
    assert extractive.model.config.plan_dim == reach.shape[1]
    assert extractive.extract_answers(result)[0].id == "2000"


def test_retrieval_ranks_by_plan_guided_scores_by_default(trained: Retriever) -> None:
    from kgqa.retrieval.models.plans import plan_guided_scores

    result = trained.retrieve("when was [Cast Away] released")
    assert result.plans is not None and "rescore" in result.timings_ms
    expected = plan_guided_scores(result.probabilities, result.plans, result.prepared.subgraph)
    torch.testing.assert_close(result.scores, expected)
    assert (result.top(1)[0].relation, result.top(1)[0].tail) == ("RELEASE_YEAR", "2000")


def test_evaluate_writes_log_and_scores_training_questions(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    log = tmp_path / "eval.jsonl"
    summary = evaluate(
        Asker(trained, AnswerSettings(), extractive=extractive),
        toy_examples(),
        log_path=log,
        hops_of=lambda e: 2,
    )
    assert summary.n == len(QUESTIONS) and summary.failed == 0
    assert summary.answer_recall[25] == 1.0
    assert summary.path_triple_recall[25] == 1.0
    assert summary.reader["hit_at_1"] >= 6 / 7
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["qid"] for r in records] == [e.qid for e in toy_examples()]
    assert {"linked", "top_triples", "answers", "gold", "timings_ms", "plans"} <= set(records[0])
    assert records[0]["plans"][0]["steps"] == ["DIRECTED_BY->"]  # "who directed [Cast Away]"
    assert "retrieval_total" in summary.latency_ms
    assert math.isnan(summary.gold_path_triple_recall[25])  # no question names its relation path


def test_evaluate_scores_gold_path_triples_where_the_question_names_its_path(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    from dataclasses import replace

    paths = {"directed": ("directed_by",), "act": ("starred_actors",), "released": ("release_year",)}
    examples = [
        replace(e, relation_paths=(next(p for word, p in paths.items() if word in e.question),))
        for e in toy_examples()
    ]
    summary = evaluate(
        Asker(trained, AnswerSettings(), extractive=extractive), examples, log_path=None, hops_of=lambda e: 2
    )
    assert summary.gold_path_triple_recall[25] == 1.0
    assert summary.plan_hit_at_1 == 1.0  # the planner learnt the toy questions' relations
    assert "planner: the likeliest plan is gold for 1.0000" in summary.render()
    # "what films did Tom Hanks act in": its three STARRED_ACTORS triples are the gold path.
    hanks = [e for e in examples if "Tom Hanks" in e.topic_ids]
    one = evaluate(
        Asker(trained, AnswerSettings(), extractive=extractive), hanks, log_path=None, hops_of=lambda e: 2
    )
    assert one.gold_path_triple_recall == {25: 1.0, 50: 1.0, 100: 1.0, 200: 1.0}


def test_evaluate_free_text_links_each_question_and_reports_linking_top1(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    from dataclasses import replace

    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    lowered = [replace(e, question=e.question.lower()) for e in toy_examples()]
    bracketed = evaluate(asker, lowered, log_path=None, hops_of=lambda e: 2)
    assert math.isnan(bracketed.linking_top1)  # the file's topics were used: nothing was linked
    log = tmp_path / "free.jsonl"
    free = evaluate(asker, lowered, log_path=log, hops_of=lambda e: 2, free_text=True)
    assert free.linking_top1 == 1.0 and free.reader["hit_at_1"] == bracketed.reader["hit_at_1"]
    assert "linking: the first linked topic is the file's for 1.0000" in free.render()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["linked"][0]["method"] for r in records} == {"exact"}  # found by name, not given
    # A line without any topic is linked too; its linking top-1 is unknown, not counted.
    bare = QAExample("toy:bare", "who directed jaws", (), ("Steven Spielberg",), line=0)
    one = evaluate(asker, [bare], log_path=None, hops_of=lambda e: 2)
    assert one.reader["hit_at_1"] == 1.0 and math.isnan(one.linking_top1)


def test_evaluate_counts_unknown_topic_as_failed(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    bad = QAExample("toy:x", "who directed Nowhere", ("Nowhere",), ("x",), line=0)
    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    summary = evaluate(asker, [bad], log_path=tmp_path / "e.jsonl", hops_of=lambda e: 2)
    assert summary.failed == 1 and summary.n == 0


def test_retriever_picks_the_contender_whose_neighbourhood_fits_the_question(
    trained: Retriever, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Two equally named candidates: the one whose plans and triples answer "who directed" wins,
    whichever the linker put first, and the retrieval is the winner's."""
    import kgqa.retrieval.retriever as retriever_module
    from kgqa.link import LinkResult
    from kgqa.types import LinkedEntity

    for first, second in (("Tom Hanks", "Jaws"), ("Jaws", "Tom Hanks")):
        cands = (
            LinkedEntity(first, first, 0.95, "it", "exact"),
            LinkedEntity(second, second, 0.95, "it", "exact"),
        )
        monkeypatch.setattr(retriever_module, "link", lambda *a, c=cands, **k: LinkResult(c, chosen=c[:1]))
        result = trained.retrieve("who directed it")
        assert [t.id for t in result.topics] == ["Jaws"]
        assert result.prepared.subgraph.entity_ids[0] == "Jaws"
        ranked = result.disambiguation.ranked
        assert [f.entity.id for f in ranked] == ["Jaws", "Tom Hanks"]
        assert result.disambiguation.margin > 0 and ranked[0].plan_share > ranked[1].plan_share
        assert result.timings_ms["disambiguate"] > 0
        assert result.to_dict()["disambiguation"]["contenders"][0]["id"] == "Jaws"


def test_a_trained_planner_takes_the_relation_name_match_as_a_prior(trained: Retriever) -> None:
    from kgqa.retrieval.models.name_match import NameMatchPlanner

    question = "who directed the films starring [Tom Hanks]"

    def retrieve(name_prior: float):  # type: ignore[no-untyped-def]
        return Retriever(
            trained.store,
            trained.embedder,
            trained.scorer,
            path_scorer=trained.path_scorer,
            planner=trained.planner,
            subgraph=trained.subgraph,
            name_prior=name_prior,
        ).retrieve(question)

    plain, primed = retrieve(0.0), retrieve(0.5)
    assert plain.plans is not None and primed.plans is not None
    assert plain.prepared.run_words is None and primed.prepared.run_words is not None
    relation_emb = trained.tables[1].matrix[primed.prepared.relation_rows]
    named = NameMatchPlanner().plan_logits(primed.prepared, relation_emb, primed.plans.plans.steps)
    torch.testing.assert_close(primed.plans.logits, plain.plans.logits + 0.5 * named)
    assert not torch.allclose(primed.plans.probabilities, plain.plans.probabilities)


def test_plans_are_weighed_by_the_answers_kind_the_question_names(trained: Retriever) -> None:
    from kgqa.retrieval.models.answer_type import answer_type_fit
    from kgqa.retrieval.models.name_match import SHARPNESS

    question = "which films did [Tom Hanks] star in"
    plain = trained.retrieve(question)
    kinded = copy.copy(trained)
    kinded.answer_type = 0.5
    weighed = kinded.retrieve(question)
    assert plain.plans is not None and weighed.plans is not None
    assert plain.prepared.answer_noun is None and weighed.prepared.answer_noun is not None
    plans = weighed.plans.plans
    rows = weighed.prepared.entity_rows
    entities, named = trained.tables[0].matrix[rows], trained.tables[0].has_text[rows]
    fit = answer_type_fit(
        plans.end_plan, plans.end_entity, plans.num_plans, weighed.prepared.answer_noun, entities, named
    )
    assert bool(fit.abs().max() > 0)
    torch.testing.assert_close(weighed.plans.logits, plain.plans.logits + 0.5 * SHARPNESS * fit)
    assert kinded.retrieve("who directed [Cast Away]").prepared.answer_noun is None  # no noun named


@pytest.mark.parametrize(("name_prior", "answer_type"), [(0.0, 0.0), (0.3, 0.1)])
def test_questions_retrieved_together_score_as_each_alone(
    trained: Retriever, name_prior: float, answer_type: float
) -> None:
    """``retrieve_many`` embeds, queries and scores the questions together; each question's
    scores, plans and topics are those it gets alone, and a question whose topic is not in the
    store gets its own error without stopping the others."""
    from kgqa.errors import EntityNotFoundError
    from kgqa.retrieval.retriever import RetrievalRequest

    retriever = copy.copy(trained)
    retriever.name_prior = name_prior
    retriever.answer_type = answer_type
    questions = [q for q, _, _ in QUESTIONS]
    requests = [RetrievalRequest(q) for q in questions[:3]]
    requests += [RetrievalRequest("who directed [No Such Film]"), RetrievalRequest(questions[3], hops=1)]
    requests += [RetrievalRequest(q) for q in questions[4:]]
    together = retriever.retrieve_many(requests, threads=2)
    assert isinstance(together[3], EntityNotFoundError)
    for request, result in zip(requests, together, strict=True):
        if request.question.startswith("who directed [No Such"):
            continue
        alone = retriever.retrieve(request.question, hops=request.hops)
        assert not isinstance(result, Exception)
        assert [t.id for t in result.topics] == [t.id for t in alone.topics]
        assert result.prepared.hops == alone.prepared.hops
        torch.testing.assert_close(result.probabilities, alone.probabilities, rtol=0, atol=1e-6)
        torch.testing.assert_close(result.scores, alone.scores, rtol=0, atol=1e-6)
        assert result.plans is not None and alone.plans is not None
        assert torch.equal(result.plans.plans.steps, alone.plans.plans.steps)
        torch.testing.assert_close(result.plans.probabilities, alone.plans.probabilities, rtol=0, atol=1e-6)
        assert set(result.timings_ms) >= {"link", "embed_question", "extract", "dde", "score", "plan"}


def test_evaluate_in_batches_logs_what_one_at_a_time_logs(
    trained: Retriever, extractive: ExtractiveReader, tmp_path: Path
) -> None:
    """``eval.batch_size`` changes how questions are retrieved, not what is answered; a question
    that cannot be answered fails alone inside its batch."""
    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    examples = [
        *toy_examples(),
        QAExample("toy:missing", "who directed No Such Film", ("No Such Film",), ("x",), line=99),
    ]
    logs = {}
    for batch in (1, 3):
        log = tmp_path / f"eval-{batch}.jsonl"
        summary = evaluate(asker, examples, log_path=log, hops_of=lambda e: 2, batch=batch, threads=2)
        assert (summary.n, summary.failed) == (len(examples) - 1, 1)
        logs[batch] = [json.loads(line) for line in log.read_text().splitlines()]
    for one, batched in zip(logs[1], logs[3], strict=True):
        assert one["qid"] == batched["qid"]
        assert one.get("predicted") == batched.get("predicted")
        assert one.get("error") == batched.get("error")
        assert [t["tail_id"] for t in one.get("top_triples", [])] == [
            t["tail_id"] for t in batched.get("top_triples", [])
        ]


def test_a_batch_whose_store_query_fails_for_one_question_answers_the_others(
    trained: Retriever, extractive: ExtractiveReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query that fails for one topic (a database's transaction timeout on a hub, say) fails
    the batch's shared subgraph step; the batch is then retried one question at a time, so only
    that question logs the error."""
    import kgqa.retrieval.retriever as retriever_module
    from kgqa.errors import QueryError

    real = retriever_module.subgraph_around

    def timing_out(store, topic_ids, settings):  # type: ignore[no-untyped-def]
        if "Jaws" in topic_ids:
            raise QueryError("transaction timed out", query="subgraph")
        return real(store, topic_ids, settings)

    monkeypatch.setattr(retriever_module, "subgraph_around", timing_out)
    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    records = list(answer_records(asker, toy_examples(), lambda e: 2, batch=4, threads=1))
    failed = [r["qid"] for r in records if "error" in r]
    assert failed == ["toy:1"] and "timed out" in records[1]["error"]
    assert [r["qid"] for r in records] == [e.qid for e in toy_examples()]


def test_the_reader_rates_several_questions_as_it_rates_each_alone(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    """One reader pass over several questions' subgraphs gives each question the probabilities
    of its own forward pass."""
    from kgqa.retrieval.features import to_batch

    retrievals = [trained.retrieve(q) for q, _, _ in QUESTIONS]
    together = extractive.entity_probabilities_many(retrievals)
    for retrieval, probabilities in zip(retrievals, together, strict=True):
        sub = retrieval.prepared.subgraph
        assert retrieval.plans is not None
        with torch.inference_mode():
            logits = extractive.model(
                to_batch(retrieval.prepared, trained.tables),
                retrieval.probabilities,
                sub.topic,
                retrieval.plans.reach(sub.num_entities),
            )
        alone = torch.sigmoid(logits).masked_fill(~retrieval.answerable(), 0.0)
        torch.testing.assert_close(probabilities, alone, rtol=0, atol=1e-6)


def test_the_reader_rates_a_batch_at_gather_only_for_a_caller_that_reads_it(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    """``gather`` (``Graph.retrieve`` stops there) runs no reader; ``gather_many(to_read=True)``
    (eval) rates the batch in one pass, and reading it answers as ``ask`` does."""
    from kgqa.retrieval.retriever import RetrievalRequest

    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    assert asker.gather("who directed [Jaws]").entity_scores is None
    questions = [q for q, _, _ in QUESTIONS[:4]]
    for question, gathered in zip(
        questions, asker.gather_many([RetrievalRequest(q) for q in questions], to_read=True), strict=True
    ):
        assert not isinstance(gathered, Exception) and gathered.entity_scores is not None
        torch.testing.assert_close(
            gathered.entity_scores, extractive.entity_probabilities(gathered.retrieval), rtol=0, atol=1e-6
        )
        assert [a.id for a in asker.read(gathered).answers] == [a.id for a in asker.ask(question).answers]
