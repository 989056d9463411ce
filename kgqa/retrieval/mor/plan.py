"""Typed plans (MoR's planning graph) over a store's schema: notation, validation, enumeration.

A plan is one or more chains that all start at the answer node. Each chain is a metapath of node
types joined by relationship types in their stored direction; every node may carry a restriction:
``text`` (the question describes it) or ``name`` (the question names it). The notation is the
one of the HPO question files::

    disease* -disease_phenotype_positive-> phenotype[text] AND disease* -disease_protein-> gene[name]
    phenotype* -phenotype_phenotype{1,2}-> phenotype[text]
    phenotype*[text] -phenotype_phenotype-> phenotype[name]

``type*`` is the answer, ``-rel->`` a hop along the stored direction, ``<-rel-`` against it,
``{1,2}`` one or two hops of that type. Chains of several hops end at an anchor (a ``text`` or
``name`` node); nodes between may carry a ``text`` restriction.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kgqa.errors import ConfigError
from kgqa.names import label_name, relationship_type

RESTRICTIONS = ("", "text", "name")
#: Hops of all chains of one plan together, at most (MoR and STaRK questions need up to 3).
MAX_HOPS = 3

_NODE = re.compile(r"^(?P<type>\w+)(?P<answer>\*)?(?:\[(?P<restriction>text|name)\])?$")
_HOP = re.compile(r"^(?P<back><)?-(?P<rel>\w+)(?:\{(?P<lo>\d),(?P<hi>\d)\})?-(?P<fwd>>)?$")


@dataclass(frozen=True, slots=True)
class Hop:
    """One step of a chain, walked from the answer's side.

    Attributes:
        rel_type: the relationship type.
        forward: True when the stored relationship points away from the answer's side.
        max_hops: 1, or 2 for ``{1,2}`` (one or two steps of a type that joins a label to itself).
    """

    rel_type: str
    forward: bool
    max_hops: int = 1

    def __str__(self) -> str:
        reps = "{1,2}" if self.max_hops == 2 else ""
        return f"-{self.rel_type}{reps}->" if self.forward else f"<-{self.rel_type}{reps}-"


@dataclass(frozen=True, slots=True)
class PlanNode:
    """A node of a chain: its type (label) and restriction ("", "text" or "name")."""

    type: str
    restriction: str = ""


@dataclass(frozen=True, slots=True)
class Chain:
    """A metapath from the answer: ``nodes[0]`` is the answer, ``hops[i]`` joins nodes i and i+1."""

    nodes: tuple[PlanNode, ...]
    hops: tuple[Hop, ...]

    def __str__(self) -> str:
        parts = [
            self.nodes[0].type + "*" + (f"[{self.nodes[0].restriction}]" if self.nodes[0].restriction else "")
        ]
        for hop, node in zip(self.hops, self.nodes[1:], strict=True):
            parts += [str(hop), node.type + (f"[{node.restriction}]" if node.restriction else "")]
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Metapath:
    """A plan: chains meeting at the answer, whose candidate sets are intersected."""

    chains: tuple[Chain, ...]

    @property
    def answer(self) -> PlanNode:
        return self.chains[0].nodes[0]

    def __str__(self) -> str:
        return " AND ".join(str(c) for c in self.chains)

    @property
    def key(self) -> tuple[str, ...]:
        """Identity of the plan whatever the order of its chains: the answer's restriction, then
        the chains written without it, sorted."""
        bare = (Chain((PlanNode(self.answer.type), *c.nodes[1:]), c.hops) for c in self.chains)
        return (self.answer.restriction, *sorted(str(c) for c in bare))

    def text_nodes(self) -> int:
        """How many nodes carry a text restriction (the answer counted once)."""
        return len(self.described())

    def described(self) -> list[str]:
        """The types of the nodes that carry a text restriction (the answer counted once)."""
        nodes = [self.answer, *(n for c in self.chains for n in c.nodes[1:])]
        return [n.type for n in nodes if n.restriction == "text"]


@dataclass(frozen=True, slots=True)
class Schema:
    """What a store's graph allows: ``(source label, relationship type, target label)`` triples."""

    triples: frozenset[tuple[str, str, str]]

    @property
    def labels(self) -> list[str]:
        return sorted({t[0] for t in self.triples} | {t[2] for t in self.triples})

    def moves(self, label: str) -> Iterator[tuple[Hop, str]]:
        """Every hop a walk at ``label`` can take, with the label it reaches, in a fixed order."""
        for src, rel, dst in sorted(self.triples):
            reps = (1, 2) if src == dst else (1,)
            for max_hops in reps:
                if src == label:
                    yield Hop(rel, True, max_hops), dst
                if dst == label:
                    yield Hop(rel, False, max_hops), src


def parse_metapath(text: str) -> Metapath:
    """Parse the notation (module docstring).

    Raises:
        ConfigError: the text is not a well-formed plan.
    """
    chains = []
    for chain_text in text.split(" AND "):
        tokens = chain_text.split()
        if len(tokens) < 3 or len(tokens) % 2 == 0:
            raise ConfigError(f"not a plan chain (node hop node ...): {chain_text!r}")
        nodes, hops = [], []
        for i, token in enumerate(tokens):
            if i % 2 == 0:
                m = _NODE.match(token)
                if m is None or bool(m.group("answer")) != (i == 0):
                    raise ConfigError(
                        f"bad plan node {token!r} in {chain_text!r}", hint="type*, type[text], type[name]"
                    )
                nodes.append(PlanNode(m.group("type"), m.group("restriction") or ""))
            else:
                h = _HOP.match(token)
                if h is None or bool(h.group("back")) == bool(h.group("fwd")):
                    raise ConfigError(
                        f"bad plan hop {token!r} in {chain_text!r}", hint="-rel->, <-rel-, -rel{1,2}->"
                    )
                if h.group("lo") and (h.group("lo"), h.group("hi")) != ("1", "2"):
                    raise ConfigError(f"only {{1,2}} repeats are supported: {token!r}")
                hops.append(Hop(h.group("rel"), bool(h.group("fwd")), 2 if h.group("lo") else 1))
        chains.append(Chain(tuple(nodes), tuple(hops)))
    return Metapath(tuple(chains))


def store_metapath(text: str) -> Metapath:
    """A plan written with source type and relation names (a question file's ``metapath``) in the
    store's names, as ingest writes labels and relationship types (``disease`` -> ``Disease``,
    ``disease_protein`` -> ``DISEASE_PROTEIN``).

    Raises:
        ConfigError: the text is not a well-formed plan.
    """
    plan = parse_metapath(text)
    return Metapath(
        tuple(
            Chain(
                tuple(PlanNode(label_name(n.type), n.restriction) for n in c.nodes),
                tuple(Hop(relationship_type(h.rel_type), h.forward, h.max_hops) for h in c.hops),
            )
            for c in plan.chains
        )
    )


def validate(plan: Metapath, schema: Schema) -> list[str]:
    """Why ``plan`` cannot run on ``schema`` ([] when it can): unknown hops, bad anchors, too long."""
    problems = []
    answer = plan.answer
    if sum(len(c.hops) for c in plan.chains) > MAX_HOPS:
        problems.append(f"more than {MAX_HOPS} hops in all")
    if len(plan.chains) > 2:
        problems.append("more than two chains")
    if len(set(plan.key[1:])) < len(plan.chains):
        problems.append("the same chain twice")
    if answer.restriction == "name":
        problems.append("the answer cannot be named in its own question")
    if any(c.nodes[0].restriction for c in plan.chains[1:]):
        problems.append("only the first chain carries the answer's restriction")
    for chain in plan.chains:
        if chain.nodes[0].type != answer.type:
            problems.append(f"chain {chain} does not start at the answer type {answer.type}")
        if not chain.hops or chain.nodes[-1].restriction not in ("text", "name"):
            problems.append(f"chain {chain} does not end at a text or name anchor")
        for hop, (a, b) in zip(chain.hops, itertools.pairwise(chain.nodes), strict=True):
            triple = (a.type, hop.rel_type, b.type) if hop.forward else (b.type, hop.rel_type, a.type)
            if triple not in schema.triples:
                problems.append(f"the store has no {triple[0]} -{triple[1]}-> {triple[2]}")
            if hop.max_hops == 2 and a.type != b.type:
                problems.append(f"{{1,2}} needs a type joining a label to itself: {hop}")
        if any(n.restriction == "name" for n in chain.nodes[1:-1]):
            problems.append(f"chain {chain}: a named node must end its chain")
    return problems


def _chains(schema: Schema, answer: str, hops_left: int) -> Iterator[Chain]:
    """Every chain from ``answer`` of 1..hops_left hops: anchor at the end, optional text between."""

    def walk(path: list[tuple[Hop, str]]) -> Iterator[list[tuple[Hop, str]]]:
        if path:
            yield path
        if len(path) < hops_left:
            here = path[-1][1] if path else answer
            for hop, label in schema.moves(here):
                yield from walk([*path, (hop, label)])

    for path in walk([]):
        middles = itertools.product(("", "text"), repeat=len(path) - 1)
        for middle, end in itertools.product(middles, ("text", "name")):
            nodes = [PlanNode(answer), *(PlanNode(lbl, r) for (_, lbl), r in zip(path, middle, strict=False))]
            nodes.append(PlanNode(path[-1][1], end))
            yield Chain(tuple(nodes), tuple(h for h, _ in path))


def _with_answer(chain: Chain, restriction: str) -> Chain:
    return Chain((PlanNode(chain.nodes[0].type, restriction), *chain.nodes[1:]), chain.hops)


def enumerate_plans(schema: Schema, *, max_hops: int = MAX_HOPS) -> list[Metapath]:
    """Every valid plan of one or two chains with at most ``max_hops`` hops in all, the answer
    with or without a text restriction, in a fixed order (the planner's candidates)."""
    plans: list[Metapath] = []
    for answer in schema.labels:
        chains = list(_chains(schema, answer, max_hops))
        for restriction in ("", "text"):
            plans += [Metapath((_with_answer(c, restriction),)) for c in chains]
            plans += [
                Metapath((_with_answer(a, restriction), b))
                for a, b in itertools.combinations(chains, 2)
                if len(a.hops) + len(b.hops) <= max_hops
            ]
    return plans


def plan_tokens(plan: Metapath) -> Iterable[str]:
    """The features the planner reads off a plan (a bag of named parts; see ``planner``)."""
    yield f"answer:{plan.answer.type}"
    yield f"answer_restriction:{plan.answer.restriction}"
    yield f"chains:{len(plan.chains)}"
    for chain in plan.chains:
        yield f"length:{len(chain.hops)}"
        for i, (hop, node) in enumerate(zip(chain.hops, chain.nodes[1:], strict=True)):
            yield f"hop:{hop}"
            yield f"hop{i}:{hop}"
            yield f"node:{node.type}[{node.restriction}]"
            yield f"node{i + 1}:{node.type}[{node.restriction}]"
        yield f"end:{chain.nodes[-1].type}[{chain.nodes[-1].restriction}]"
