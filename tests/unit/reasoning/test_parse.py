"""Parsing ``ans:`` lines out of LLM replies."""

from __future__ import annotations

import pytest

from kgqa.errors import AnswerParseError
from kgqa.reasoning.parse import is_abstention, parse_answers

PAPER_REPLY = (
    "So, the team with mascot named Lou Seal (San Francisco Giants) won the World Series in 2010, 2012, "
    "and 2014.\n\nTherefore, the formatted answers are:\n\n"
    "ans: 2014 (2014 World Series)\n\nans: 2012 (2012 World Series)\n\nans: 2010 (2010 World Series)"
)


def test_parse_answers_reads_several_lines_in_order() -> None:
    parsed = parse_answers(PAPER_REPLY)
    assert parsed.answers == (
        "2014 (2014 World Series)",
        "2012 (2012 World Series)",
        "2010 (2010 World Series)",
    )
    assert parsed.has_answer_line and not parsed.abstained


def test_parse_answers_strips_decoration_and_dedupes_keeping_first_spelling() -> None:
    reply = '**ANS:** "Paris".\n- Ans : Paris\n  ans:   London ;\n1. ans: `Rome`!\nans: ‘Berlin’'
    assert parse_answers(reply).answers == ("Paris", "London", "Rome", "Berlin")


def test_parse_answers_splits_several_markers_on_one_line() -> None:
    assert parse_answers("ans: Texas Rangers ans: Dallas Stars").answers == ("Texas Rangers", "Dallas Stars")


@pytest.mark.parametrize(
    "reply",
    [
        "ans: not available",
        "Ans: Not Available.",
        "ans: N/A",
        "ans: none",
        "ans: unknown",
        "ans:",
        "ans: 'not found'",
    ],
)
def test_parse_answers_marks_abstention_variants(reply: str) -> None:
    parsed = parse_answers("Therefore, we cannot determine it.\n" + reply)
    assert parsed.answers == () and parsed.abstained and parsed.has_answer_line


def test_parse_answers_keeps_real_answers_beside_an_abstention() -> None:
    parsed = parse_answers("ans: not available\nans: Judy Garland")
    assert parsed.answers == ("Judy Garland",) and not parsed.abstained


@pytest.mark.parametrize("reply", ["", "The answer is Paris.", "Plans: none", "answers: Paris", "transans:x"])
def test_parse_answers_finds_nothing_without_an_ans_marker(reply: str) -> None:
    parsed = parse_answers(reply)
    assert parsed.answers == () and not parsed.has_answer_line and not parsed.abstained


def test_parse_answers_ignores_junk_around_answers() -> None:
    reply = "<think>ans is hard</think>\n\x00\x1b[0m ##\nans: 1994\nThat's all!!!"
    assert parse_answers(reply).answers == ("1994",)


def test_parse_answers_strict_raises_without_ans_line() -> None:
    with pytest.raises(AnswerParseError, match="no 'ans:' line"):
        parse_answers("Paris, I think.", strict=True)


def test_is_abstention_ignores_case_and_punctuation() -> None:
    assert is_abstention("Not available!")
    assert not is_abstention("Not available yet in Spain")
