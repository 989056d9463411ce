"""Questions worded from a graph's own vocabulary: a signed relation path from a named topic,
read as English in several surface forms (``kgqa train --from-graph``).

Why: a graph nobody labelled has no question file, but its relation names are words
(``directed_by``, ``people.person.place_of_birth``), and the planner reads cosines of those
words with the question (:mod:`kgqa.retrieval.models.plans`). Questions that put the same words around
a topic in many orders teach it to find relation mentions wherever people put them. Nothing here
comes from a benchmark's question templates: the only content words are the graph's relation
names, its node types and the topic's name, and the few function words below.

A step is read forward (the answer is the tail: "the directed by of Cast Away", "Cast Away 's
directed by", "what is Cast Away directed by") or backward (the answer is the head: "the ones
directed by Robert Zemeckis", "Robert Zemeckis is the directed by of what"); steps nest inside
out ("the in language of the ones directed by X" or "X 's ... 's ..."). The random choices come
from the caller's ``random.Random``, so the wording is fixed by the generation seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgqa.names import relation_text

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

#: Forward step phrases (answer = tail, ``{np}`` = the head), by name.
_FORWARD = {
    "of": "the {w} of {np}",
    "poss": "{np} 's {w}",
    "that-is": "the {t} that {np} is {w}",
}
#: Backward step phrases (answer = head, ``{np}`` = the tail), by name.
_BACKWARD = {
    "part": "the {ts} {w} {np}",
    "whose": "the {ts} whose {w} is {np}",
    "have-as": "the {ts} that have {np} as {w}",
    "is-of": "the {ts} {np} is the {w} of",
}
#: Whole questions around the outermost noun phrase.
_ASK = ("what is {np}", "what are {np}", "which are {np}", "who is {np}", "name {np}", "{np}", "tell me {np}")
#: Whole two-topic questions around their two clauses.
_AND = ("what {ts} {a} and {b}", "name the {ts} {a} and {b}", "which {ts} {a} and also {b}")
#: Phrases that read well only around a plain noun phrase (the topic, or a chain of "'s"):
#: "the ones the one X is the W of is the V of" nests two clauses nobody can parse.
_AROUND_PLAIN = frozenset({"poss", "that-is", "have-as", "is-of", "verb", "verb-what"})
#: Whole questions that read the last step as a verb (answer = tail / head of that step).
_LAST_FORWARD = {
    "verb": "what is {np} {w}",
    "verb-what": "{np} {w} what",
    "which": "which {t} is the {w} of {np}",
}
_LAST_BACKWARD = {
    "verb": "what is {w} {np}",
    "is-of": "{np} is the {w} of what",
    "which": "which {t} is {w} {np}",
}


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a walk: a relationship type crossed forward (head -> tail) or backward.

    Attributes:
        relation: the relationship type (``DIRECTED_BY``).
        forward: True when the walk goes from the triple's head to its tail.
    """

    relation: str
    forward: bool

    def to_list(self) -> list[str]:
        return [self.relation, "out" if self.forward else "in"]


@dataclass(frozen=True, slots=True)
class Worded:
    """A question and the name of the surface form it was written in (``of|part|ask:what-is``)."""

    text: str
    form: str


def relation_words(source_name: str) -> str:
    """The words of a source relation name: ``directed_by`` -> ``directed by``; a dotted
    (Freebase) name gives its last part, ``people.person.place_of_birth`` -> ``place of birth``
    (the parts before it name the subject's domain and type, which the question does not say)."""
    return relation_text(source_name.rsplit(".", 1)[-1]).lower() or relation_text(source_name).lower()


def type_words(node_type: str | None, *, plural: bool) -> str:
    """A node type as words (``MovieGenre`` -> ``movie genre(s)``), else ``one``/``ones``."""
    if not node_type:
        return "ones" if plural else "one"
    words = _CAMEL.sub(" ", node_type).replace("_", " ").lower()
    return words + "s" if plural and not words.endswith("s") else words


def word_path(
    topic: str,
    steps: Sequence[Step],
    words: Sequence[str],
    types: Sequence[str | None],
    sizes: Sequence[int],
    rng: random.Random,
) -> Worded:
    """One question asking for the ends of ``steps`` walked from ``topic``.

    Args:
        topic: the topic's name as the graph writes it.
        steps: the signed path, topic first.
        words: :func:`relation_words` of each step's relation.
        types: the node type every entity reached after each step shares, else None.
        sizes: how many entities each step reaches (plural words for more than one).
        rng: the generator's random source (the seed fixes the wording).
    """
    np_, parts, plain = topic, [], True
    for i in range(len(steps) - 1):
        np_, name = _nest(np_, steps[i], words[i], types[i], sizes[i], rng, plain=plain)
        parts.append(name)
        plain = name == "poss"
    last, w = steps[-1], words[-1]
    if rng.random() < 0.4:
        table = _LAST_FORWARD if last.forward else _LAST_BACKWARD
        name = rng.choice(_allowed(table, plain))
        text = table[name].format(np=np_, w=w, t=type_words(types[-1], plural=False))
        return Worded(finish(text, rng), "|".join([*parts, f"last:{name}"]))
    np_, name = _nest(np_, last, w, types[-1], sizes[-1], rng, plain=plain)
    ask = rng.choice(_ASK)
    return Worded(finish(ask.format(np=np_), rng), "|".join([*parts, name, f"ask:{ask.split(' {')[0]}"]))


def word_conjunction(
    topics: Sequence[str],
    steps: Sequence[Step],
    words: Sequence[str],
    node_type: str | None,
    rng: random.Random,
) -> Worded:
    """One question asking for what one step from each of two topics reaches alike
    ("name the ones directed by X and whose release year is Y"), each clause read in its step's
    direction; ``node_type`` is the answers' shared type, if any."""
    clauses = []
    for topic, step, w in zip(topics, steps, words, strict=True):
        if step.forward:
            clauses.append(rng.choice((f"that are the {w} of {topic}", f"that are {topic} 's {w}")))
        else:
            clauses.append(rng.choice((f"{w} {topic}", f"whose {w} is {topic}", f"that have {topic} as {w}")))
    joiner = rng.choice(_AND)
    text = joiner.format(ts=type_words(node_type, plural=True), a=clauses[0], b=clauses[1])
    return Worded(finish(text, rng), f"and:{joiner.split(' {')[0]}")


def _nest(
    np_: str, step: Step, w: str, node_type: str | None, size: int, rng: random.Random, *, plain: bool
) -> tuple[str, str]:
    table = _FORWARD if step.forward else _BACKWARD
    name = rng.choice(_allowed(table, plain))
    t, ts = type_words(node_type, plural=False), type_words(node_type, plural=size > 1)
    return table[name].format(np=np_, w=w, t=t, ts=ts), name


def _allowed(table: dict[str, str], plain: bool) -> list[str]:
    return sorted(n for n in table if plain or n not in _AROUND_PLAIN)


def finish(text: str, rng: random.Random) -> str:
    """``text`` with its spaces made single and an end chosen by ``rng`` (none, " ?" or "?")."""
    text = " ".join(text.split())
    return text + rng.choice(("", " ?", "?"))
