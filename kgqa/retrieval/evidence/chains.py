"""ReG structure-aware reorganisation (ReG 4.2, App. D.4): selected triples as evidence chains.

A reader given a bag of triples has to rebuild their structure itself. ReG hands it chains that
follow the KG instead, in two steps:

1. **Chain expansion (App. D.4.1).** BFS from every triple anchored at a topic entity: a chain
   grows by a triple that starts where it ends. A step may also walk a triple backwards (the
   chain's current end is the triple's tail), which is how a chain reaches a topic that is the
   tail of a triple. No entity repeats in a chain, a chain has at most ``max_hops`` triples, and
   only maximal chains are kept (one with an extension is a prefix of a kept chain).
2. **Structure-aware merging (App. D.4.2).** Multi-answer merge: chains with the same root and
   the same relation path (relations and directions) become one line whose entity positions
   list every entity met there, ``e1 -> r1 -> e2 -> r2 -> e3 | e4``. Multi-entity merge: lines
   from different topics that reach a common end entity are placed next to each other.

Triples that no chain reaches (over the hop budget, or not connected to a topic) stay as
single-triple lines, so every selected triple is still in the prompt. Lines are rendered with
:func:`kgqa.retrieval.evidence.items.render_steps` (``a -> r -> b`` along a triple, ``b <- r <- a``
against it), always reading from the topic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kgqa.errors import KgqaError
from kgqa.retrieval.evidence.items import EvidenceGraph, EvidenceItem, render_steps

#: Chain expansion enumerates simple walks, which grow like degree ** max_hops on dense graphs;
#: refuse rather than exhaust memory.
MAX_CHAINS = 200_000


class _Arrays(NamedTuple):
    """The graph's tensors as Python lists, converted once per call."""

    heads: list[int]
    rels: list[int]
    tails: list[int]
    scores: list[float]


@dataclass(frozen=True, slots=True)
class Chain:
    """One chain from topic ``root``: ``triples[i]`` joins ``entities[i]`` and ``entities[i + 1]``,
    walked head -> tail where ``forward[i]``."""

    root: int
    entities: tuple[int, ...]
    triples: tuple[int, ...]
    forward: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class _Line:
    """An evidence item plus what the multi-entity merge looks at (root None: a leftover triple)."""

    item: EvidenceItem
    root: int | None
    ends: frozenset[int]


def evidence_chains(graph: EvidenceGraph, *, max_hops: int) -> list[EvidenceItem]:
    """Reorganise one question's selected triples into ReG evidence chains, best last.

    The score of a line is the mean score of the triples it renders (for a merged line, of the
    union of its chains' triples). Lines come out in ascending score, except that lines from
    different topics sharing an end entity form one block: blocks are ordered by their best
    line and lines inside a block ascending, so the overall best line is still last. Ties keep
    the order in which lines were built (topics in ``graph.topics`` order, then leftovers by
    triple index).

    Args:
        graph: the selected triples (``head``/``rel``/``tail``/``scores`` [E]) and topics.
        max_hops: the longest chain, in triples (the hop budget; ReG uses the dataset's hops).

    Returns:
        One :class:`EvidenceItem` per merged chain or leftover triple, weakest first. Together
        the items cover every triple of ``graph`` (a triple may lie on several chains).

    Raises:
        ValueError: ``max_hops < 1``.
        KgqaError: expansion would build more than ``MAX_CHAINS`` chains.

    Example:
        >>> import torch
        >>> g = EvidenceGraph(torch.tensor([0, 1]), torch.tensor([0, 1]), torch.tensor([1, 2]),
        ...     torch.tensor([0.9, 0.5]), ["Jaws", "Spielberg", "1946"], ["directed_by", "born"], [0])
        >>> [item.text for item in evidence_chains(g, max_hops=2)]
        ['Jaws -> directed_by -> Spielberg -> born -> 1946']
    """
    if max_hops < 1:
        raise ValueError(f"evidence_chains: max_hops must be >= 1, got {max_hops}")
    arrays = _arrays(graph)
    heads, rels, tails, scores = arrays
    lines = _merge_answers(graph, arrays, _expand(graph.topics, arrays, max_hops))
    covered = {t for line in lines for t in line.item.triples}
    for t in range(len(heads)):
        if t not in covered:
            text = render_steps(
                [graph.entity_names[heads[t]], graph.entity_names[tails[t]]],
                [graph.relation_names[rels[t]]],
                [True],
            )
            item = EvidenceItem(text, (t,), (heads[t], tails[t]), scores[t])
            lines.append(_Line(item, None, frozenset()))
    return _order(lines)


def merge_chains(graph: EvidenceGraph, chains: Sequence[Chain]) -> list[EvidenceItem]:
    """ReG's two merges (App. D.4.2) applied to given chains, best last, as in :func:`evidence_chains`.

    For selections that choose whole chains themselves (:mod:`kgqa.retrieval.evidence.plan_evidence`):
    triples on no chain are not shown.
    """
    return _order(_merge_answers(graph, _arrays(graph), list(chains)))


def _arrays(graph: EvidenceGraph) -> _Arrays:
    return _Arrays(graph.head.tolist(), graph.rel.tolist(), graph.tail.tolist(), graph.scores.tolist())


def _expand(topics: Sequence[int], arrays: _Arrays, max_hops: int) -> list[Chain]:
    """Maximal chains from every topic, BFS one hop per round (App. D.4.1, both directions)."""
    heads, _, tails, _ = arrays
    steps: dict[int, list[tuple[int, int, bool]]] = defaultdict(list)  # entity -> (triple, next, forward)
    for t, (h, tl) in enumerate(zip(heads, tails, strict=True)):
        if h != tl:  # a self-loop repeats its entity, so it never extends a chain
            steps[h].append((t, tl, True))
            steps[tl].append((t, h, False))
    kept: list[Chain] = []
    for root in dict.fromkeys(topics):  # each topic once, in order
        frontier = [Chain(root, (root,), (), ())]
        for _ in range(max_hops):
            grown = []
            for chain in frontier:
                nxt = [
                    Chain(root, (*chain.entities, v), (*chain.triples, t), (*chain.forward, fwd))
                    for t, v, fwd in steps[chain.entities[-1]]
                    if v not in chain.entities
                ]
                if not nxt and chain.triples:
                    kept.append(chain)
                grown.extend(nxt)
            if len(kept) + len(grown) > MAX_CHAINS:
                raise KgqaError(
                    f"chain expansion (max_hops={max_hops}) would build more than {MAX_CHAINS:,} chains "
                    f"from {len(heads)} triples",
                    hint="lower retrieval.chain_hops or select fewer triples",
                )
            frontier = grown
        kept.extend(frontier)  # chains at the hop limit are maximal
    return kept


def _merge_answers(graph: EvidenceGraph, arrays: _Arrays, chains: list[Chain]) -> list[_Line]:
    """Multi-answer merge: one line per (root, relation path), entity positions joined by ``|``."""
    _, rels, _, scores = arrays
    groups: dict[tuple[int, tuple[tuple[int, bool], ...]], list[Chain]] = defaultdict(list)
    for chain in chains:
        path = tuple((rels[t], fwd) for t, fwd in zip(chain.triples, chain.forward, strict=True))
        groups[(chain.root, path)].append(chain)
    lines = []
    for (root, path), group in groups.items():
        positions = [list(dict.fromkeys(c.entities[i] for c in group)) for i in range(len(path) + 1)]
        triples = tuple(dict.fromkeys(t for i in range(len(path)) for t in (c.triples[i] for c in group)))
        text = render_steps(
            [" | ".join(graph.entity_names[e] for e in pos) for pos in positions],
            [graph.relation_names[r] for r, _ in path],
            [fwd for _, fwd in path],
        )
        entities = tuple(dict.fromkeys(e for pos in positions for e in pos))
        score = sum(scores[t] for t in triples) / len(triples)
        lines.append(_Line(EvidenceItem(text, triples, entities, score), root, frozenset(positions[-1])))
    return lines


def _order(lines: list[_Line]) -> list[EvidenceItem]:
    """Multi-entity merge, then best last: blocks by their best score, lines ascending inside."""
    parent = list(range(len(lines)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    ending: dict[int, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        for e in line.ends:
            ending[e].append(i)
    for idx in ending.values():
        if len({lines[i].root for i in idx}) > 1:  # lines from different topics meet at this entity
            for i in idx[1:]:
                parent[find(i)] = find(idx[0])
    blocks: dict[int, list[int]] = defaultdict(list)
    for i in range(len(lines)):
        blocks[find(i)].append(i)
    ordered = sorted(blocks.values(), key=lambda b: max(lines[i].item.score for i in b))
    return [lines[i].item for b in ordered for i in sorted(b, key=lambda i: lines[i].item.score)]
