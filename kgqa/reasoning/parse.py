"""Answers from an LLM reply: the ``ans:`` lines the SubgraphRAG prompt asks for.

Replies are untrusted text, so parsing is lenient about decoration (case, bullets, markdown bold,
quotes, trailing full stops, several ``ans:`` on one line) and strict about the one thing that
matters: only text after an ``ans:`` marker is an answer. ``ans: not available`` (and the usual
variants models write instead) is an abstention, kept apart from a reply with no ``ans:`` line at
all, which is a format failure the reader retries once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgqa.errors import AnswerParseError

_ANS = re.compile(r"(?<![A-Za-z0-9_])ans\s*:", re.IGNORECASE)
_STRIP = " \t\"'`*_“”‘’«»"
_TRAILING = ".,;:!?"

ABSTENTIONS = frozenset(
    {
        "not available",
        "n/a",
        "na",
        "none",
        "unknown",
        "no answer",
        "no answers",
        "no answer available",
        "not applicable",
        "not found",
        "not provided",
        "not mentioned",
        "not given",
        "not enough information",
        "insufficient information",
        "no information",
        "cannot be determined",
        "can not be determined",
        "cannot determine",
        "unable to determine",
        "not available in the triplets",
        "not available in the triples",
        "not available in the paths",
    }
)
"""Normalised answers that mean "I don't know". The paper's examples write ``ans: not available``;
the rest are what instruction-tuned models commonly put in its place."""


@dataclass(frozen=True, slots=True)
class ParsedAnswers:
    """What one reply says.

    Attributes:
        answers: distinct answers in reply order (first spelling kept), abstentions removed.
        abstained: the reply has ``ans:`` lines but none names an answer (e.g. ``ans: not available``).
        has_answer_line: the reply contains at least one ``ans:`` marker.
    """

    answers: tuple[str, ...]
    abstained: bool
    has_answer_line: bool


def _clean(raw: str) -> str:
    text = raw.strip().strip(_STRIP)
    while text and text[-1] in _TRAILING:
        text = text[:-1].rstrip().rstrip(_STRIP)
    return text


def _key(answer: str) -> str:
    return " ".join(answer.casefold().split())


def is_abstention(answer: str) -> bool:
    """Whether a cleaned answer is one of the :data:`ABSTENTIONS` (case and punctuation ignored)."""
    key = _key(answer).strip(_STRIP + _TRAILING)
    return key in ABSTENTIONS


def parse_answers(reply: str, *, strict: bool = False) -> ParsedAnswers:
    """Collect the answers of a reply.

    Each line is searched for ``ans:`` markers (not inside a word, so bullets, numbering and
    markdown before them do not matter); the text after a marker, up to the next marker or the
    line end, is one answer.
    Answers are stripped of whitespace, quotes, markdown emphasis and trailing punctuation, then
    deduplicated case-insensitively keeping the first spelling.

    Args:
        reply: the model's text.
        strict: raise instead of returning ``has_answer_line=False``.

    Returns:
        The :class:`ParsedAnswers`.

    Raises:
        AnswerParseError: ``strict`` and the reply has no ``ans:`` line.
    """
    answers: list[str] = []
    seen: set[str] = set()
    found = False
    for line in reply.splitlines():
        markers = list(_ANS.finditer(line))
        if not markers:
            continue
        found = True
        ends = [m.start() for m in markers[1:]] + [len(line)]
        for marker, end in zip(markers, ends, strict=True):
            answer = _clean(line[marker.end() : end])
            if not answer or is_abstention(answer):
                continue
            key = _key(answer)
            if key not in seen:
                seen.add(key)
                answers.append(answer)
    if strict and not found:
        snippet = reply.strip().replace("\n", " ")[:120]
        raise AnswerParseError(
            f"LLM reply has no 'ans:' line: {snippet!r}",
            hint="use a model that follows the answer format, or keep the reader's double-check retry on",
        )
    return ParsedAnswers(tuple(answers), abstained=found and not answers, has_answer_line=found)
