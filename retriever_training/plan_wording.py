"""Questions worded from a typed graph's own vocabulary: a typed plan (MoR's metapath) with its
anchors filled in, read as English in several surface forms (``kgqa train --format stark
--from-graph``).

Why: MoR's planner scores plans against the question's embedding and the types of the entities
it names, and its span cues are learnt from where descriptions sit in training questions
(:func:`kgqa.retrieval.mor.planner.learn_cues`). A graph nobody labelled still has the words for
both: node types (``disease``, ``gene``), relation names split into words (``disease phenotype
positive``), node names and node texts. Nothing here comes from a benchmark's templates: the
only content words are those, and the few function words below.

A plan is read from the answer outward: the answer type ("which diseases"), then each chain as
a clause of hops ("that have disease phenotype positive a phenotype described as "..." that
are the phenotype protein of KCNH1"), chains joined by "and". A hop stored away from the answer
side reads "that have {w} ...", "whose {w} is ..."; one stored toward it "that are the {w} of
...". The one description a question may carry is quoted or not, introduced by a few cues
("described as", "with the text", "whose text says"). The random choices come from the caller's
``random.Random``, so the wording is fixed by the generation seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from retriever_training.path_wording import Worded, finish, type_words

#: Ways to introduce a node's description, by name (quoted ones end at the closing quote).
DESCRIBED = {
    "described-as-q": 'described as "{d}"',
    "text-q": 'with the text "{d}"',
    "text-says-q": 'whose text says "{d}"',
    "quoted": '"{d}"',
    "described-as": "described as {d}",
    "text-colon": "with text: {d}",
}
#: A hop stored away from the answer's side (``{y}``: the far node), by name.
_AWAY = {
    "have": "that have {w} {y}",
    "whose": "whose {w} is {y}",
    "with": "with {w} {y}",
    "bare": "{w} {y}",
}
#: A hop stored toward the answer's side, by name.
_TOWARD = {
    "are-of": "that are the {w} of {y}",
    "of": "{w} of {y}",
    "poss": "that are {y} 's {w}",
}
#: How a hop of one or two steps (``{1,2}``) reads its relation words.
_REPEAT = ("{w} within two steps", "{w} directly or indirectly", "{w} one or two steps away")
#: Ways to name an anchor.
_NAMED = ("{n}", "the {t} {n}", "{t} {n}")
#: Whole questions around the answer phrase and the chains.
_ASK = (
    "which {a} {c}",
    "what {a} {c}",
    "name the {a} {c}",
    "find the {a} {c}",
    "list the {a} {c}",
    "the {a} {c}",
)
#: Joiners of two chains.
_AND = ("{a} and {b}", "{a} and also {b}", "{a}, and {b}")


@dataclass(frozen=True, slots=True)
class PlanNode:
    """A node of a plan as the question refers to it.

    Attributes:
        type: its label (``Disease``); read through :func:`type_words`.
        name: the name of a named anchor, else None.
        description: the description of a text-restricted node, else None.
    """

    type: str
    name: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class PlanHop:
    """A hop of a chain, walked from the answer's side.

    Attributes:
        words: the relation's words (:func:`~retriever_training.path_wording.relation_words`).
        away: True when the stored relationship points away from the answer's side.
        repeat: one or two steps of the relation (``{1,2}``).
    """

    words: str
    away: bool
    repeat: bool = False


def word_plan(
    answer: PlanNode,
    chains: Sequence[Sequence[tuple[PlanHop, PlanNode]]],
    *,
    plural: bool,
    rng: random.Random,
) -> Worded:
    """One question asking for the answers of a plan.

    Args:
        answer: the answer node (its description, if it has one, is the question's).
        chains: each chain's hops with the node each reaches, from the answer outward; the last
            node of a chain is its anchor (named or described).
        plural: the question asks for several answers.
        rng: the generator's random source.

    Returns:
        The question and its surface form's name (``ask:which|have,are-of|and|described-as-q``).
    """
    form: list[str] = []
    clauses = [_chain(list(chain), rng, form) for chain in chains]
    c = clauses[0] if len(clauses) == 1 else rng.choice(_AND).format(a=clauses[0], b=clauses[1])
    if answer.description is not None:
        a = f"{type_words(answer.type, plural=False)} {_describe(answer.description, rng, form)}"
    else:
        a = type_words(answer.type, plural=plural)
    ask = rng.choice(_ASK)
    text = finish(ask.format(a=a, c=c), rng)
    return Worded(text, "|".join([f"ask:{ask.split(' {')[0]}", *form]))


def _chain(chain: list[tuple[PlanHop, PlanNode]], rng: random.Random, form: list[str]) -> str:
    """The clause of a chain: its first hop around the phrase of everything beyond it."""
    hop, node = chain[0]
    y = _node(node, chain[1:], rng, form)
    table = _AWAY if hop.away else _TOWARD
    if len(chain) > 1 or node.description is not None:
        # "that are Y 's w" reads only around a plain name
        names = sorted(n for n in table if n != "poss")
    else:
        names = sorted(table)
    name = rng.choice(names)
    words = rng.choice(_REPEAT).format(w=hop.words) if hop.repeat else hop.words
    form.append(name + ("+repeat" if hop.repeat else ""))
    return table[name].format(w=words, y=y)


def _node(node: PlanNode, rest: list[tuple[PlanHop, PlanNode]], rng: random.Random, form: list[str]) -> str:
    t = type_words(node.type, plural=False)
    if node.name is not None:
        phrase = rng.choice(_NAMED).format(n=node.name, t=t)
    elif node.description is not None:
        phrase = f"{rng.choice((_article(t), 'the'))} {t} {_describe(node.description, rng, form)}"
    else:
        phrase = f"{rng.choice((_article(t), 'some'))} {t}"
    return f"{phrase} {_chain(rest, rng, form)}" if rest else phrase


def _article(words: str) -> str:
    return "an" if words[:1] in "aeiou" else "a"


def _describe(description: str, rng: random.Random, form: list[str]) -> str:
    name = rng.choice(sorted(DESCRIBED))
    form.append(name)
    return DESCRIBED[name].format(d=description)
