"""The SubgraphRAG prompt: wording, layout, evidence order and budget trimming."""

from __future__ import annotations

import pytest
from llm_fakes import count_lines, make_items

from kgqa.errors import ReaderError
from kgqa.reasoning.prompts import (
    EXAMPLE_PATHS,
    EXAMPLE_TRIPLES,
    SYSTEM_PROMPT_TRIPLES,
    base_messages,
    build_prompt,
    double_check_message,
    evidence_budget,
)

LINES = [f"(e{i},r{i},e{i + 1})" for i in range(10)]  # weakest first, best last


def _build(items, *, context_tokens=100_000, max_new_tokens=50, form="triples", count=count_lines):
    return build_prompt(
        "Who is e9?",
        items,
        form=form,
        count_tokens=count,
        context_tokens=context_tokens,
        max_new_tokens=max_new_tokens,
    )


def test_system_prompt_is_the_papers_wording() -> None:
    assert SYSTEM_PROMPT_TRIPLES == (
        "Based on the triples retrieved from a knowledge graph, please answer the question. "
        'Please return formatted answers as a list, each prefixed with "ans:".'
    )


def test_build_prompt_has_system_one_shot_then_question_last() -> None:
    prompt = _build(make_items(LINES))
    roles = [m["role"] for m in prompt.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert prompt.messages[0]["content"] == SYSTEM_PROMPT_TRIPLES
    example_user, example_reply = prompt.messages[1]["content"], prompt.messages[2]["content"]
    assert example_user.startswith("Triplets:\n(Lou Seal,sports.mascot.team,San Francisco Giants)\n")
    assert example_user.endswith(
        "\n\nQuestion:\nWhat year did the team with mascot named Lou Seal win the World Series?"
    )
    assert len(EXAMPLE_TRIPLES) == 30
    assert example_reply.endswith(
        "ans: 2014 (2014 World Series)\nans: 2012 (2012 World Series)\nans: 2010 (2010 World Series)"
    )
    assert prompt.messages[3]["content"] == "Triplets:\n" + "\n".join(LINES) + "\n\nQuestion:\nWho is e9?"


def test_build_prompt_keeps_items_in_order_with_best_last() -> None:
    items = make_items(LINES)
    prompt = _build(items)
    body = prompt.messages[-1]["content"]
    positions = [body.index(line + "\n") for line in LINES]
    assert positions == sorted(positions)
    assert body.split("\n\nQuestion:")[0].endswith(LINES[-1])
    assert prompt.items_used == tuple(items)
    assert prompt.items_dropped == 0


def test_build_prompt_drops_weakest_items_first_when_over_budget() -> None:
    items = make_items(LINES)
    fixed = count_lines(_build([]).message_list())
    prompt = _build(items, context_tokens=fixed + 3 + 50, max_new_tokens=50)
    assert prompt.items_used == tuple(items[-3:])
    assert prompt.items_dropped == 7
    body = prompt.messages[-1]["content"]
    assert "(e6,r6,e7)" not in body and "(e7,r7,e8)" in body and "(e9,r9,e10)" in body


def test_build_prompt_records_exact_token_count_of_final_messages() -> None:
    calls: list[int] = []

    def counter(messages):
        calls.append(1)
        return count_lines(messages)

    fixed = count_lines(_build([]).message_list())
    prompt = _build(make_items(LINES), context_tokens=fixed + 4 + 50, max_new_tokens=50, count=counter)
    assert prompt.prompt_tokens == count_lines(prompt.message_list()) == fixed + 4
    assert prompt.prompt_tokens <= fixed + 4  # within context_tokens - max_new_tokens
    assert len(calls) <= 2 + 4  # full, empty, then a binary search over 10 items


def test_build_prompt_raises_when_even_the_fixed_part_does_not_fit() -> None:
    with pytest.raises(ReaderError, match="without evidence") as info:
        _build(make_items(LINES), context_tokens=60, max_new_tokens=50)
    assert "reader.context_tokens" in (info.value.hint or "")


def test_build_prompt_paths_form_uses_paths_header_and_example() -> None:
    paths = ["A -> r -> B", "A -> r -> B -> s -> C"]
    prompt = _build(make_items(paths), form="paths")
    assert "paths retrieved" in prompt.messages[0]["content"]
    assert prompt.messages[1]["content"].startswith("Paths:\n" + EXAMPLE_PATHS[0])
    assert "From the paths, we can see" in prompt.messages[2]["content"]
    assert (
        prompt.messages[3]["content"] == "Paths:\nA -> r -> B\nA -> r -> B -> s -> C\n\nQuestion:\nWho is e9?"
    )
    assert EXAMPLE_PATHS[-1].endswith("2010 World Series")


def test_double_check_message_restates_the_ans_format() -> None:
    message = double_check_message("triples")
    assert message["role"] == "user"
    assert '"ans:"' in message["content"] and "ans: not available" in message["content"]
    assert "triplets" in message["content"]
    assert "paths" in double_check_message("paths")["content"]


def test_base_messages_returns_fresh_copies() -> None:
    first = base_messages("triples")
    first[0]["content"] = "changed"
    assert base_messages("triples")[0]["content"] == SYSTEM_PROMPT_TRIPLES


def test_evidence_budget_defaults_to_what_build_prompt_leaves_for_evidence() -> None:
    # count_lines counts lines, so each evidence line costs one token and the budget is the
    # number of lines build_prompt keeps.
    budget = evidence_budget(
        "Who is e9?", form="paths", count_tokens=count_lines, context_tokens=80, max_new_tokens=10
    )
    assert budget.count("e1 -> r1 -> e2") == 1
    many = make_items([f"e{i} -> r -> e{i + 1}" for i in range(100)])
    kept = _build(many, context_tokens=80, max_new_tokens=10, form="paths").items_used
    assert budget.tokens == len(kept) == 33
    given = evidence_budget(
        "Who is e9?", form="paths", count_tokens=count_lines, context_tokens=80, max_new_tokens=10, tokens=3
    )
    assert given.tokens == 3
