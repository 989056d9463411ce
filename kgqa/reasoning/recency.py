"""The latest or the earliest of the answers, where the question asks for it by a year they bear.

"when was the last time the orioles won the world series" walks to every World Series the
Orioles won (1966, 1970, 1983), and the train-free reader answered all three, 1970 first; the
question wants one. A graph says when things happened in the names of dated things ("1983 World
Series", "2014 Stanley Cup Finals") or as a neighbour named by a year (MetaQA's release years);
so where the question asks for the latest ("last", "latest", "most recent", "newest") or the
earliest ("first", "earliest") and the answers bear years one of those ways, at least two of
them different, only the answers of the extreme year are kept.

A graph misses a date here and there (one of Robert Zemeckis's 16 films has no release year in
MetaQA), so up to one answer in :data:`YEARLESS_SHARE` may bear none (and is dropped); more,
and the answers are of mixed kinds ("Super Bowl XLIII" beside "2011 AFC Championship Game"),
whose years do not answer the question. Then the answers named like the reader's first answer,
but for a number in the same place (a year or a Roman numeral: "Super Bowl XIV", "Super Bowl
XLIII"), are a numbered series, and the highest (lowest) number of the series is kept: the
Steelers' last Super Bowl is XLIII. The data decides whether a word is a superlative over time:
"the first language spoken in spain" or "who did cliff lee play for last year" leave their
answers (languages, teams) alone, since none bears a year or a number. Nothing is trained; a
graph that dates a fact on a mediator (Freebase's roster ``from`` / ``to``) is not read yet.
Roman numerals are read by hand (:func:`roman_value`, the linker's regular expression): a
dependency for them would add an install to every machine kgqa runs on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from kgqa.linking_words import ROMAN_NUMERAL
from kgqa.retrieval.models.name_match import around_mentions
from kgqa.retrieval.retriever import Retrieval

#: Word runs that ask for the latest answer, and those that ask for the earliest.
_LATEST = re.compile(r"\b(?:last|latest|newest|most recent(?:ly)?)\b")
_EARLIEST = re.compile(r"\b(?:first|earliest)\b")
#: A year as a name's word: 1000-2099 ("1983 World Series", "1973–74 FA Cup": 1973).
_YEAR = re.compile(r"(?<![\w.])(1\d{3}|20\d{2})(?![\w.])")
#: At most one answer in this many may bear no year for the rest to be ordered by theirs.
YEARLESS_SHARE = 10
#: A name that is a year or a date and nothing else ("1997", "1997-05-02").
_YEAR_NAME = re.compile(r"^\s*(1\d{3}|20\d{2})(?:-\d{2}(?:-\d{2})?)?\s*$")


class _Answer(Protocol):
    """What both readers' answers have: the entity's id and its name."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


_A = TypeVar("_A", bound=_Answer)


def asks_extreme(question: str, mentions: Sequence[str] = ()) -> int:
    """+1 where ``question`` asks for the latest, -1 for the earliest, 0 for neither (or both),
    read outside its topics' ``mentions`` ("who directed the last samurai" asks for neither).

    >>> asks_extreme("when was the last time the orioles won the world series?", ["orioles"])
    1
    >>> asks_extreme("what year did the warriors win their first championship")
    -1
    >>> asks_extreme("who directed the last samurai", ["the last samurai"])
    0
    """
    text = " ".join(around_mentions(question, mentions)).lower()
    latest, earliest = bool(_LATEST.search(text)), bool(_EARLIEST.search(text))
    return int(latest) - int(earliest)


def year_of(name: str) -> int | None:
    """The first year ``name`` holds as a word of its own, or None.

    >>> year_of("1983 World Series"), year_of("1973–74 FA Cup"), year_of("Super Bowl XLIII")
    (1983, 1973, None)
    """
    found = _YEAR.search(name)
    return None if found is None else int(found.group(1))


def answer_years(retrieval: Retrieval, answers: Sequence[_Answer]) -> list[int | None]:
    """Per answer, the year it bears: in its own name beside other words ("1983 World Series"),
    else the first of its neighbours named by a year alone along the one relation (type and
    direction) that gives most answers such a neighbour (a film's release year, not a tag "2015"
    of the year it is set in), else its name where that is a year alone (the year a question about
    years answers, or the film "1941" where no release year is in the subgraph); None where it
    bears none."""
    sub = retrieval.prepared.subgraph
    local = sub.local_ids()
    wanted = {local[a.id] for a in answers if _own_year(a.name) is None and a.id in local}
    # (relation type, answer is its head) -> answer -> the years it leads to
    along: dict[tuple[int, bool], dict[int, list[int]]] = {}
    if wanted:
        edges = zip(sub.head.tolist(), sub.rel.tolist(), sub.tail.tolist(), strict=True)
        for head, rel, tail in edges:
            for entity, other, forward in ((head, tail, True), (tail, head, False)):
                if entity in wanted:
                    name = retrieval.names.get(sub.entity_ids[other], sub.entity_ids[other])
                    found = _YEAR_NAME.match(name)
                    if found is not None:
                        by_answer = along.setdefault((rel, forward), {})
                        by_answer.setdefault(entity, []).append(int(found.group(1)))
    dated = max(along.values(), key=len) if along else {}
    years: list[int | None] = []
    for answer in answers:
        own = _own_year(answer.name)
        near = dated.get(local.get(answer.id, -1))
        years.append(own if own is not None else min(near) if near else year_of(answer.name))
    return years


_ROMAN_DIGITS = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_value(word: str) -> int | None:
    """The value of ``word`` as an upper-case Roman numeral, as names write them ("Super Bowl
    XLIII", "Henry VIII"), or None.

    >>> roman_value("XLIII"), roman_value("XIV"), roman_value("Bowl"), roman_value("xiv")
    (43, 14, None, None)
    """
    if not word or not word.isupper() or not ROMAN_NUMERAL.fullmatch(word.lower()):
        return None
    digits = [_ROMAN_DIGITS[letter] for letter in word]
    return sum(-d if d < after else d for d, after in zip(digits, [*digits[1:], 0], strict=True))


def numbered(name: str) -> tuple[str, int] | None:
    """``name`` as a member of a numbered series: its words with the last year or Roman numeral
    among them put as "#", and that number; None where it holds neither.

    >>> numbered("Super Bowl XLIII"), numbered("1983 World Series"), numbered("Forrest Gump")
    (('Super Bowl #', 43), ('# World Series', 1983), None)
    """
    words = name.split()
    for i in reversed(range(len(words))):
        year = _YEAR_NAME.match(words[i])
        number = int(year.group(1)) if year else roman_value(words[i])
        if number is not None:
            return " ".join([*words[:i], "#", *words[i + 1 :]]), number
    return None


def _own_year(name: str) -> int | None:
    """The year ``name`` holds beside other words; None for a bare year or date."""
    return None if _YEAR_NAME.match(name) else year_of(name)


def latest_or_earliest(retrieval: Retrieval, answers: Sequence[_A]) -> list[_A]:
    """``answers`` narrowed to those of the latest (or earliest) year where the question asks for
    it (:func:`asks_extreme`) and the answers bear years (:func:`answer_years`), at most one in
    :data:`YEARLESS_SHARE` none; where more bear none, to the highest (lowest) number of the
    numbered series the first answer belongs to (:func:`numbered`); either only where two of
    the numbers differ, else ``answers`` as they are. Order is kept."""
    direction = asks_extreme(retrieval.question, [t.mention or t.name for t in retrieval.topics])
    if not direction or len(answers) < 2:
        return list(answers)
    numbers = answer_years(retrieval, answers)
    if sum(year is None for year in numbers) * YEARLESS_SHARE > len(numbers):  # of mixed kinds
        first = numbered(answers[0].name)
        members = [numbered(answer.name) for answer in answers]
        numbers = [
            m[1] if m is not None and first is not None and m[0] == first[0] else None for m in members
        ]
    known = {number for number in numbers if number is not None}
    if len(known) < 2:
        return list(answers)
    extreme = max(known) if direction > 0 else min(known)
    return [answer for answer, number in zip(answers, numbers, strict=True) if number == extreme]
