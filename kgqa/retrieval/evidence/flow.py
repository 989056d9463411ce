"""PathRAG flow-based pruning (PathRAG 4.2-4.3): key paths between retrieved nodes, best last.

PathRAG keeps, among the many paths joining two retrieved nodes, the ones a decaying flow of
"resource" from one of them still reaches in strength (paper 4.2):

- Eq. 2, resource propagation: ``S(start) = 1`` and a node ``v`` receives
  ``sum over u of alpha * S(u) / deg(u)`` from the nodes ``u`` that reach it in the previous
  BFS layer. ``alpha`` is the decay per hop; each node is updated once, by the first layer that
  reaches it (later layers do not add to it).
- Eq. 3, early stopping: resource does not flow on from a node with ``S(v) / deg(v) < theta``.
- Eq. 4, reliability of a path ``P`` with nodes ``V_P`` and edges ``E_P``:
  ``S(P) = (1 / |E_P|) * sum over v in V_P of S(v)`` -- the sum runs over the |E_P| + 1 nodes
  (start included, ``S = 1``) and is divided by the number of edges, exactly as printed, so
  a reliability may exceed 1 (a one-edge path scores ``1 + S(end)``).
- 4.2 / 4.3: the top-``top_k`` paths over all node pairs go to the prompt in ascending
  reliability, the most reliable last (next to the question).

The evidence graph is directed, but flow and paths ignore direction (a knowledge graph stores a
relation one way round; PathRAG's indexing graph is undirected). ``deg(u)`` is the number of
distinct neighbours of ``u``; parallel triples between two entities count once and a path step
between them uses the highest-scored one (lowest index on ties). Each step remembers whether it
walks its triple forward or backward, and lines render with
:func:`kgqa.retrieval.evidence.items.render_path` (``a -> r -> b`` along a triple, ``b <- r <- a``
against it).

Choices where the paper is open:

- Pairs are ordered: propagation is asymmetric, so every retrieved node is a start in turn, and
  one propagation per start serves all its ends. A path and its reverse are one line: the
  orientation with the higher reliability is kept (the earlier-found one on ties).
- The start always passes resource to its neighbours; Eq. 3 applies to every other node
  (with theta 0.3, a start with 4 or more neighbours would otherwise reach nothing).
- Candidate paths are the simple paths of at most ``max_hops`` edges from the start to another
  retrieved node whose nodes before the end all pass Eq. 3; a path may pass through other
  retrieved nodes. Every such path is a candidate (the paper keeps "the most reliable" per pair
  without a number); only the global ``top_k`` cut applies.
- ``deg`` counts neighbours in the whole evidence graph (the paper's |N(v, .)|). With the
  code's theta = 0.3 a first-hop node ``v`` passes flow on only if ``deg(start) * deg(v) <= 2``
  (0.8 / (deg(start) * deg(v)) >= 0.3), so most kept paths have one or two edges; with the
  paper's theta = 0.05 the bound is ``deg(start) * deg(v) <= 16``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import pairwise

from kgqa.retrieval.evidence.items import EvidenceGraph, EvidenceItem, render_path


def flow_paths(
    graph: EvidenceGraph,
    nodes: Sequence[int],
    *,
    alpha: float = 0.8,
    theta: float = 0.3,
    max_hops: int = 3,
    top_k: int = 15,
) -> list[EvidenceItem]:
    """The ``top_k`` most reliable flow-pruned paths between retrieved nodes, best last.

    Builds the undirected neighbour lists once per call (no cache is kept between calls), runs
    one propagation (Eq. 2-3) per retrieved node and scores every candidate path with Eq. 4.
    Ties in reliability keep the order paths were found (starts in ``nodes`` order, neighbours by
    ascending entity id), the earlier one ranking higher.

    Args:
        graph: the selected triples (``head``/``rel``/``tail``/``scores`` [E]) of one question.
        nodes: local ids of the retrieved nodes (duplicates ignored; ids in no triple reach
            nothing).
        alpha: decay rate of Eq. 2, in (0, 1].
        theta: pruning threshold of Eq. 3, >= 0 (0 disables pruning).
        max_hops: longest path, in edges.
        top_k: number of paths kept over all pairs.

    Returns:
        At most ``top_k`` :class:`EvidenceItem` paths in ascending reliability; ``entities`` are
        the path's nodes from its start, ``triples`` its steps, ``score`` its reliability S(P).

    Raises:
        ValueError: ``alpha`` outside (0, 1], ``theta < 0``, ``max_hops < 1``, ``top_k < 0`` or a
            node id outside ``0..len(graph.entity_names) - 1``.

    Example:
        >>> import torch
        >>> g = EvidenceGraph(torch.tensor([0, 2]), torch.tensor([0, 1]), torch.tensor([1, 1]),
        ...     torch.tensor([0.9, 0.5]), ["Jaws", "Spielberg", "E.T."], ["directed_by"] * 2, [0])
        >>> [(p.text, round(p.score, 2)) for p in flow_paths(g, [0, 2])]  # (1 + .8 + .32) / 2
        [('Jaws -> directed_by -> Spielberg <- directed_by <- E.T.', 1.06)]
    """
    _check(graph, nodes, alpha=alpha, theta=theta, max_hops=max_hops, top_k=top_k)
    neighbours, via = _undirected(graph)
    retrieved = list(dict.fromkeys(int(v) for v in nodes))
    targets = set(retrieved)
    best: dict[tuple[int, ...], tuple[float, tuple[int, ...]]] = {}  # canonical nodes -> (S(P), nodes)
    for start in retrieved:
        resource = _propagate(start, neighbours, alpha=alpha, max_hops=max_hops, theta=theta)
        for path in _paths(start, targets, neighbours, resource, theta=theta, max_hops=max_hops):
            reliability = sum(resource[v] for v in path) / (len(path) - 1)  # Eq. 4
            key = min(path, path[::-1])
            if key not in best or reliability > best[key][0]:
                best[key] = (reliability, path)
    ranked = sorted(best.values(), key=lambda rp: rp[0], reverse=True)[:top_k]
    items = []
    for reliability, path in reversed(ranked):
        triples = tuple(via[step] for step in pairwise(path))
        items.append(EvidenceItem(render_path(graph, path, triples), triples, path, reliability))
    return items


def _undirected(graph: EvidenceGraph) -> tuple[dict[int, list[int]], dict[tuple[int, int], int]]:
    """Sorted distinct neighbours per entity, and the triple a step u -> v uses (best-scored)."""
    scores = graph.scores.tolist()
    via: dict[tuple[int, int], int] = {}
    for t, (h, tl) in enumerate(zip(graph.head.tolist(), graph.tail.tolist(), strict=True)):
        if h == tl:  # a self-loop lies on no simple path
            continue
        for pair in ((h, tl), (tl, h)):
            if pair not in via or scores[t] > scores[via[pair]]:
                via[pair] = t
    neighbours: dict[int, list[int]] = defaultdict(list)
    for u, v in sorted(via):
        neighbours[u].append(v)
    return neighbours, via


def _propagate(
    start: int, neighbours: dict[int, list[int]], *, alpha: float, max_hops: int, theta: float
) -> dict[int, float]:
    """Resources S(v) of every node the flow from ``start`` reaches within ``max_hops`` layers."""
    resource = {start: 1.0}
    layer = [start]
    for _ in range(max_hops):
        inflow: dict[int, float] = defaultdict(float)
        for u in layer:
            if not neighbours[u] or (u != start and _stops(u, resource, neighbours, theta)):
                continue
            share = alpha * resource[u] / len(neighbours[u])  # Eq. 2
            for v in neighbours[u]:
                if v not in resource:  # updated once: only by the first layer that reaches it
                    inflow[v] += share
        resource.update(inflow)
        layer = list(inflow)
        if not layer:
            break
    return resource


def _stops(v: int, resource: dict[int, float], neighbours: dict[int, list[int]], theta: float) -> bool:
    """Eq. 3: the flow stops at ``v`` when S(v) / deg(v) < theta."""
    return resource[v] / len(neighbours[v]) < theta


def _paths(
    start: int,
    targets: set[int],
    neighbours: dict[int, list[int]],
    resource: dict[int, float],
    *,
    theta: float,
    max_hops: int,
) -> list[tuple[int, ...]]:
    """Simple paths of 1..max_hops edges from ``start`` to another target, through flowing nodes."""
    found = []
    stack: list[tuple[int, ...]] = [(start,)]
    while stack:
        path = stack.pop()
        end = path[-1]
        if len(path) > 1 and end in targets:
            found.append(path)
        if len(path) > max_hops or (end != start and _stops(end, resource, neighbours, theta)):
            continue
        stack.extend((*path, v) for v in reversed(neighbours[end]) if v not in path)
    return found


def _check(
    graph: EvidenceGraph, nodes: Sequence[int], *, alpha: float, theta: float, max_hops: int, top_k: int
) -> None:
    """Reject arguments no propagation can use, naming what arrived (caller bugs, hence ValueError)."""
    if not 0 < alpha <= 1:
        raise ValueError(f"flow_paths: alpha must lie in (0, 1], got {alpha}")
    if theta < 0:
        raise ValueError(f"flow_paths: theta must be >= 0, got {theta}")
    if max_hops < 1:
        raise ValueError(f"flow_paths: max_hops must be >= 1, got {max_hops}")
    if top_k < 0:
        raise ValueError(f"flow_paths: top_k must be >= 0, got {top_k}")
    n = len(graph.entity_names)
    bad = [int(v) for v in nodes if not 0 <= int(v) < n]
    if bad:
        raise ValueError(f"flow_paths: node ids must lie in 0..{n - 1}; got {bad[:5]}")
