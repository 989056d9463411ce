"""LLMReader over a scripted LLMClient fake: decoding settings, the one retry, budgets, the log record."""

from __future__ import annotations

from llm_fakes import ScriptedLLM, count_lines, make_items

from kgqa.config import ReaderSettings
from kgqa.reasoning import LLMReader
from kgqa.reasoning.prompts import base_messages, double_check_message, user_message
from kgqa.reasoning.readers import LLMClient

LINES = [f"(e{i},r{i},e{i + 1})" for i in range(8)]
SETTINGS = ReaderSettings(kind="llm", max_new_tokens=20)


def test_scripted_llm_satisfies_the_client_protocol() -> None:
    assert isinstance(ScriptedLLM([]), LLMClient)


def test_llm_reader_answers_with_temperature_zero_and_fixed_seed() -> None:
    llm = ScriptedLLM(["Reasoning...\nans: e8\nans: e7"])
    reading = LLMReader(llm, SETTINGS).read("Who?", make_items(LINES))
    assert reading.answers == ("e8", "e7")
    assert not reading.abstained and not reading.retried and not reading.format_error
    assert (llm.calls[0]["temperature"], llm.calls[0]["max_tokens"]) == (0.0, 20)
    assert reading.raw_replies == ("Reasoning...\nans: e8\nans: e7",)
    assert reading.model_id == "scripted"


def test_llm_reader_reports_abstention_without_retry() -> None:
    llm = ScriptedLLM(["There is no information.\nans: not available"])
    reading = LLMReader(llm, SETTINGS).read("Who?", make_items(LINES))
    assert reading.abstained and reading.answers == () and not reading.retried and not reading.format_error
    assert len(llm.calls) == 1


def test_llm_reader_retries_exactly_once_then_flags_format_error() -> None:
    llm = ScriptedLLM(["I am not sure.", "Still not sure.", "ans: never asked"])
    reading = LLMReader(llm, SETTINGS).read("Who?", make_items(LINES), form="paths")
    assert len(llm.calls) == 2
    assert reading.retried and reading.format_error and reading.abstained and reading.answers == ()
    assert reading.raw_replies == ("I am not sure.", "Still not sure.")
    assert llm.calls[1]["messages"][-2:] == [
        {"role": "assistant", "content": "I am not sure."},
        double_check_message("paths"),
    ]


def test_llm_reader_trims_evidence_to_context_and_reports_what_it_used() -> None:
    items = make_items(LINES)
    fixed = count_lines([*base_messages("triples"), user_message("Who?", [], form="triples")])
    llm = ScriptedLLM(["ans: e8"], context_tokens=fixed + 3 + 20)
    reading = LLMReader(llm, SETTINGS).read("Who?", items)
    assert reading.items_used == tuple(items[-3:]) and reading.items_dropped == 5
    assert reading.prompt_tokens == fixed + 3
    assert llm.calls[0]["messages"][-1]["content"].startswith("Triplets:\n(e5,r5,e6)\n")


def test_llm_reader_retry_drops_more_evidence_to_fit_the_longer_conversation() -> None:
    items = make_items(LINES)
    fixed = count_lines([*base_messages("triples"), user_message("Who?", [], form="triples")])
    first_reply = "line one\nline two"  # two more "tokens" once it is part of the conversation
    llm = ScriptedLLM([first_reply, "ans: e8"], context_tokens=fixed + 6 + 20)
    reading = LLMReader(llm, SETTINGS).read("Who?", items)
    tail = count_lines([{"role": "assistant", "content": first_reply}, double_check_message("triples")])
    assert reading.answers == ("e8",) and reading.retried
    assert reading.items_dropped == len(items) - (6 - tail)
    assert count_lines(llm.calls[1]["messages"]) <= fixed + 6


def test_llm_reading_to_dict_is_json_ready() -> None:
    reading = LLMReader(ScriptedLLM(["ans: e8"]), SETTINGS).read("Who?", make_items(LINES[:2]))
    record = reading.to_dict()
    assert record["answers"] == ["e8"] and record["raw_replies"] == ["ans: e8"]
    assert record["items_used"] == LINES[:2] and record["format_error"] is False
