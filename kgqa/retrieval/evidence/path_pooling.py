"""Path pooling (Path Pooling 3.3-3.4): train-free smoothing of triple scores along path kernels.

A triple scorer rates each triple on its own. Path pooling adds structure without training: it
finds paths from (and to) the topic entities on the candidate graph built from the scored
triples, gives every path the mean score of its triples, and lets each triple take the best
score of the paths it lies on, so a weak link on a strong path is lifted (paper Algorithm 1):

1. paths P = {p_{e->v}} u {p_{v->e}} for every topic e and entity v, found by a path kernel;
2. base score of p = (tau_1, ..., tau_l): ``s_p = mean(s_1..s_l)``;
3. the i-th triple (1-based, counted from the topic end) scores ``s_p + s_min / (i * a)``, with
   ``s_min`` the lowest score over all E input triples;
4. pooled score = max over the paths containing the triple; a triple on no path is a
   single-triple path, ``s + s_min / a``.

Kernels: ``dijkstra`` (the paper's choice) runs scipy Dijkstra from every topic on a CSR built
once per question, with edge weight ``1 - s`` (scores are probabilities in [0, 1]; the paper
does not give the weight) and keeps the highest-scored triple of parallel ones; ``bfs``
enumerates every simple path of at most ``max_len`` triples (4 in the paper, which is why it
finds many more paths than Dijkstra); ``random_walk`` samples ``num_walks`` walks of at most
``max_len`` triples per direction, each walk prefix being one path. Paths "to" a topic are found
on the reversed graph, so their positions are also counted from the topic. The graph search is
numpy/scipy on the CPU (one host copy per call); the result follows the device of ``scores``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from numpy.typing import NDArray
from scipy.sparse import csr_array
from scipy.sparse.csgraph import dijkstra
from torch import Tensor

from kgqa.errors import KgqaError

Kernel = Literal["dijkstra", "bfs", "random_walk"]
Directions = Literal["both", "from", "to"]
IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: The paper calls ``a`` "a nonzero constant" and gives no value; with 1 the first triple of a
#: path gains s_min, the least any triple scores, so the bonus orders triples within a path
#: without outweighing the scores themselves.
DEFAULT_A = 1.0
#: Longest BFS / random-walk path, in triples (paper 4.3.1).
MAX_PATH_LEN = 4
#: Random walks per direction (paper 4.3.1: "Random Walk samples 256 times").
NUM_WALKS = 256
#: BFS enumeration grows like degree ** max_len; refuse rather than exhaust memory.
MAX_BFS_PATHS = 2_000_000
_KERNELS = ("dijkstra", "bfs", "random_walk")


def path_pool(
    scores: Tensor,
    head: Tensor,
    tail: Tensor,
    topic: Tensor,
    num_nodes: int,
    *,
    kernel: Kernel = "dijkstra",
    a: float = DEFAULT_A,
    directions: Directions = "both",
    max_len: int = MAX_PATH_LEN,
    num_walks: int = NUM_WALKS,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Smooth one question's triple scores along path kernels from and to the topic entities.

    Args:
        scores: FloatTensor [E] triple scores in [0, 1], higher is better (scorer probabilities).
        head: LongTensor [E] local head ids; ``tail``: LongTensor [E] local tail ids (``0..N-1``).
        topic: LongTensor [T] local ids of the topic entities (duplicates harmless; may be empty).
        num_nodes: N, the number of local entities.
        kernel: ``dijkstra`` (default), ``bfs`` (all simple paths up to ``max_len``) or
            ``random_walk``.
        a: nonzero constant of the positional bonus ``s_min / (i * a)``.
        directions: ``both`` (paths from and to the topics, as in the paper), ``from`` or ``to``.
        max_len: longest path in triples for ``bfs`` and ``random_walk`` (Dijkstra is unbounded).
        num_walks: random walks per direction; ``generator`` seeds them (``random_walk`` only).

    Returns:
        Tensor [E] pooled scores, same dtype and device as ``scores``.

    Raises:
        ValueError: mismatched shapes, ids outside ``0..N-1``, ``a == 0``, an unknown kernel, or
            scores outside [0, 1] for ``dijkstra``.
        KgqaError: ``bfs`` would enumerate more than ``MAX_BFS_PATHS`` paths.

    Example:
        >>> s = torch.tensor([0.9, 0.5, 0.2])
        >>> path_pool(s, torch.tensor([0, 1, 3]), torch.tensor([1, 2, 4]), torch.tensor([0]), 5)
        tensor([1.1000, 0.8000, 0.4000])
    """
    s = scores.detach().to("cpu", torch.float64).numpy()
    h = head.detach().to("cpu", torch.int64).numpy()
    t = tail.detach().to("cpu", torch.int64).numpy()
    topics = np.unique(topic.detach().to("cpu", torch.int64).numpy())
    _check_inputs(s, h, t, topics, num_nodes, kernel=kernel, a=a, max_len=max_len)
    uniforms = _walk_uniforms(max_len, num_walks, generator) if kernel == "random_walk" else None
    kernels = []
    for i, (src, dst) in enumerate(_orientations(h, t, directions)):
        if topics.size == 0 or s.size == 0:
            break
        if kernel == "dijkstra":
            kernels.append(_dijkstra_paths(1.0 - s, src, dst, topics, num_nodes))
        elif kernel == "bfs":
            kernels.append(_bfs_paths(src, dst, topics, num_nodes, max_len))
        elif uniforms is not None:
            kernels.append(_walk_paths(src, dst, topics, num_nodes, uniforms[i]))
    pooled = _pool(s, kernels, a)
    return torch.from_numpy(pooled).to(device=scores.device, dtype=scores.dtype)


def path_reach(scores: Tensor, head: Tensor, tail: Tensor, topic: Tensor, num_nodes: int) -> Tensor:
    """How well the scored triples connect each entity to a topic: best path probability.

    ``reach[v] = max over paths topic -> v of the product of their triple scores``, direction
    ignored (a reasoning path walks KB triples either way). A per-triple scorer rates the last
    triple of "films sharing actors with X -> their directors" the same whichever film it hangs
    from; the product also asks whether the way there was rated relevant. Dijkstra on
    ``-log(score)`` from all topics at once.

    Args:
        scores: FloatTensor [E] triple probabilities in [0, 1].
        head, tail: LongTensor [E] local ids; ``topic``: LongTensor [T]; ``num_nodes``: N.

    Returns:
        Tensor [N] in [0, 1], like ``scores``: 1 at the topics, 0 where no path exists.
    """
    s = scores.detach().to("cpu", torch.float64).numpy()
    h = head.detach().to("cpu", torch.int64).numpy()
    t = tail.detach().to("cpu", torch.int64).numpy()
    topics = np.unique(topic.detach().to("cpu", torch.int64).numpy())
    _check_inputs(s, h, t, topics, num_nodes, kernel="dijkstra", a=DEFAULT_A, max_len=MAX_PATH_LEN)
    reach = np.zeros(num_nodes)
    if topics.size and s.size:
        weight = np.concatenate([-np.log(np.clip(s, 1e-12, 1.0))] * 2)
        src, dst = np.concatenate([h, t]), np.concatenate([t, h])
        best, _ = _lightest_parallel(weight, src, dst, num_nodes)
        graph = csr_array((weight[best], (src[best], dst[best])), shape=(num_nodes, num_nodes))
        reach = np.exp(-dijkstra(graph, directed=True, indices=topics, min_only=True))
    reach[topics] = 1.0
    return torch.from_numpy(reach).to(device=scores.device, dtype=scores.dtype)


def hop_distance(head: Tensor, tail: Tensor, topic: Tensor, num_nodes: int) -> Tensor:
    """LongTensor [N]: fewest triples (either direction) from a topic; ``num_nodes`` if none."""
    dist = torch.full((num_nodes,), num_nodes, dtype=torch.long, device=head.device)
    dist[topic] = 0
    frontier = torch.zeros(num_nodes, dtype=torch.bool, device=head.device)
    frontier[topic] = True
    for step in range(1, num_nodes):
        reached = torch.zeros_like(frontier)
        reached[tail[frontier[head]]] = True
        reached[head[frontier[tail]]] = True
        frontier = reached & (dist == num_nodes)
        if not frontier.any():
            break
        dist[frontier] = step
    return dist


def path_rescore(scores: Tensor, head: Tensor, tail: Tensor, topic: Tensor, num_nodes: int) -> Tensor:
    """Rank triples by the best path from a topic that ends with them, per hop.

    ``(s * max(reach[h], reach[t])) ** (1 / L)`` with ``reach`` from :func:`path_reach` and ``L``
    the hop distance of the triple's far end (the path's length when it is a shortest one): the
    geometric mean of the triple scores along that path. The product alone asks whether the way
    to a triple was rated relevant, so a "starred actors" triple hanging from a film the question
    never reaches drops; dividing the exponent by the length keeps the third hop of a good path
    above the first hop of a weak one. It is not the default ranking: the second-pass scorer
    (:mod:`kgqa.retrieval.models.path_context`) learns the same thing, and where a hub fans out to
    hundreds of first hops, all of them rank before any second hop (docs/decisions.md).

    Returns:
        Tensor [E] in [0, 1], like ``scores``; 0 for triples no topic reaches.
    """
    reach = path_reach(scores, head, tail, topic, num_nodes)
    dist = hop_distance(head, tail, topic, num_nodes)
    length = torch.maximum(dist[head], dist[tail]).clamp(min=1).to(scores.dtype)
    return (scores * torch.maximum(reach[head], reach[tail])) ** (1 / length)


def positional_rerank(scores: Tensor, order_k: int) -> Tensor:
    """The top-``order_k`` triples ordered by ascending score, so the best one comes LAST.

    Prompts put the triples right before the question and LLMs favour recent tokens (recency
    bias, paper 3.4), so the strongest evidence goes next to the question. Ties keep the lower
    index nearer the end.

    Args:
        scores: Tensor [E] (pooled) triple scores, higher is better.
        order_k: how many triples to keep (all of them when larger than E).

    Returns:
        LongTensor [min(order_k, E)] triple indices, worst first, best last.
    """
    k = max(0, min(order_k, scores.numel()))
    return torch.argsort(scores, descending=True, stable=True)[:k].flip(0)


def reselect(scores: Tensor, pooled: Tensor, *, coarse_n: int = 500, k: int) -> Tensor:
    """Triple reselection (paper 3.4): coarse top-``coarse_n`` by raw score, then top-``k`` by pooled.

    The scorer's own ranking decides which triples are candidates; pooling only re-ranks inside
    that set, so a triple outside it is never picked, whatever its pooled score. The paper pools
    over the candidate graph of the coarse set itself; to do the same, pool ``scores[coarse]``
    and write the result back at ``coarse`` (``pooled`` is only read at the coarse indices).

    Args:
        scores: Tensor [E] raw scorer scores; ``pooled``: Tensor [E] path-pooled scores.
        coarse_n: size of the coarse set (500 in the paper).
        k: number of triples to return (k' in the paper, e.g. 25-100).

    Returns:
        LongTensor [min(k, coarse_n, E)] triple indices, best last (ready for the prompt).
    """
    coarse = torch.argsort(scores, descending=True, stable=True)[:coarse_n]
    return coarse[positional_rerank(pooled[coarse], k)]


# --------------------------------------------------------------------------- pooling


def _pool(s: FloatArray, kernels: list[IntArray], a: float) -> FloatArray:
    """Mean pooling + positional bonus, max over paths; triples on no path stand alone: [E].

    Each kernel is an [P, L] matrix of triple ids, column 0 at the topic, padded with -1.
    """
    s_min = s.min() if s.size else 0.0
    out = np.full(s.size, -np.inf)
    for paths in kernels:
        if paths.size == 0:
            continue
        valid = paths >= 0
        base = np.where(valid, s[paths], 0.0).sum(1) / valid.sum(1)
        bonus = s_min / (a * np.arange(1, paths.shape[1] + 1))
        np.maximum.at(out, paths[valid], (base[:, None] + bonus)[valid])
    alone = np.isneginf(out)
    out[alone] = s[alone] + s_min / a
    return out


def _orientations(h: IntArray, t: IntArray, directions: Directions) -> list[tuple[IntArray, IntArray]]:
    """(src, dst) edge arrays to search from the topics: the graph itself and/or its reverse."""
    out = []
    if directions in ("both", "from"):
        out.append((h, t))
    if directions in ("both", "to"):
        out.append((t, h))
    return out


# --------------------------------------------------------------------------- Dijkstra


def _dijkstra_paths(weight: FloatArray, src: IntArray, dst: IntArray, topics: IntArray, n: int) -> IntArray:
    """Shortest paths from every topic to every entity it reaches: [P, L] (one row per pair)."""
    best, keys = _lightest_parallel(weight, src, dst, n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src[best], minlength=n), out=indptr[1:])
    graph = csr_array((weight[best], dst[best], indptr), shape=(n, n))
    _, pred = dijkstra(graph, directed=True, indices=topics, return_predecessors=True)
    return _tree_paths(pred, best, keys, n)


def _lightest_parallel(weight: FloatArray, src: IntArray, dst: IntArray, n: int) -> tuple[IntArray, IntArray]:
    """One triple per (src, dst) pair: the lightest (ties: lowest id), with sorted pair keys.

    A CSR built straight from the triples would add up the weights of parallel triples.
    """
    keys = src * n + dst
    order = np.lexsort((weight, keys))
    sorted_keys = keys[order]
    first = np.ones(keys.size, dtype=bool)
    first[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return order[first], sorted_keys[first]


def _tree_paths(pred: NDArray[np.int32], best: IntArray, keys: IntArray, n: int) -> IntArray:
    """Walk the predecessor arrays [T, N] back to the topics, all paths at once: [P, L].

    ``via[r, v]`` is the triple on the tree edge pred[v] -> v (looked up once through the sorted
    pair keys); the walk then takes one vectorised step per hop, so the loop runs over path
    length, never over paths or triples. Topics point at themselves and have no ``via``.
    """
    reached = pred >= 0
    row, node = np.nonzero(reached)
    if row.size == 0:
        return np.empty((0, 1), dtype=np.int64)
    parent = np.where(reached, pred, np.arange(n))
    via = np.full(pred.shape, -1, dtype=np.int64)
    via[row, node] = best[np.searchsorted(keys, parent[row, node] * n + node)]
    steps = []
    step = via[row, node]
    while step.max() >= 0:
        steps.append(step)
        node = parent[row, node]
        step = via[row, node]
    return _topic_first(np.stack(steps, axis=1))


def _topic_first(back: IntArray) -> IntArray:
    """Reverse each row's valid prefix: column j = j-th triple from the far end -> from the topic."""
    valid = back >= 0
    length = valid.sum(1)
    p, j = np.nonzero(valid)
    out = np.full(back.shape, -1, dtype=np.int64)
    out[p, length[p] - 1 - j] = back[p, j]
    return out


# --------------------------------------------------------------------------- BFS, random walk


def _adjacency(src: IntArray, n: int) -> tuple[IntArray, IntArray]:
    """Triples grouped by source entity: (order [E], indptr [N + 1]); parallel triples all kept."""
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return order, indptr


def _bfs_paths(src: IntArray, dst: IntArray, topics: IntArray, n: int, max_len: int) -> IntArray:
    """Every simple path of 1..max_len triples starting at a topic, level by level: [P, max_len]."""
    order, indptr = _adjacency(src, n)
    nodes = topics[:, None]
    trips = np.empty((topics.size, 0), dtype=np.int64)
    levels = []
    total = 0
    for _ in range(max_len):
        start = indptr[nodes[:, -1]]
        deg = indptr[nodes[:, -1] + 1] - start
        parent = np.repeat(np.arange(deg.size), deg)
        e = order[start[parent] + np.arange(parent.size) - np.repeat(np.cumsum(deg) - deg, deg)]
        simple = ~(nodes[parent] == dst[e][:, None]).any(axis=1)
        parent, e = parent[simple], e[simple]
        trips = np.concatenate([trips[parent], e[:, None]], axis=1)
        nodes = np.concatenate([nodes[parent], dst[e][:, None]], axis=1)
        total += e.size
        if total > MAX_BFS_PATHS:
            raise KgqaError(
                f"path pooling (bfs, max_len={max_len}) would enumerate more than {MAX_BFS_PATHS:,} "
                f"paths on a graph of {src.size} triples",
                hint='use kernel="dijkstra" (the default) or a smaller max_len',
            )
        levels.append(trips)
    out = np.full((total, max_len), -1, dtype=np.int64)
    offset = 0
    for trips in levels:
        out[offset : offset + trips.shape[0], : trips.shape[1]] = trips
        offset += trips.shape[0]
    return out


def _walk_uniforms(max_len: int, num_walks: int, generator: torch.Generator | None) -> FloatArray:
    """Uniform draws [2 directions, max_len, num_walks] from ``generator`` (its device) in one call."""
    device = generator.device if generator is not None else torch.device("cpu")
    shape = (2, max_len, num_walks)
    return torch.rand(shape, generator=generator, dtype=torch.float64, device=device).cpu().numpy()


def _walk_paths(src: IntArray, dst: IntArray, topics: IntArray, n: int, uniforms: FloatArray) -> IntArray:
    """Random walks from the topics (walk w starts at topic w mod T), every prefix a path: [P, L].

    ``uniforms`` [L, W] drives the walks: at each step a walk takes one of the current entity's
    triples uniformly (parallel triples separately) and stops for good at an entity with none.
    """
    order, indptr = _adjacency(src, n)
    steps, walks = uniforms.shape
    node = topics[np.arange(walks) % topics.size]
    walk = np.full((walks, steps), -1, dtype=np.int64)
    alive = np.ones(walks, dtype=bool)
    for i in range(steps):
        deg = indptr[node + 1] - indptr[node]
        alive &= deg > 0
        w = np.flatnonzero(alive)
        pick = np.minimum((uniforms[i, w] * deg[w]).astype(np.int64), deg[w] - 1)
        e = order[indptr[node[w]] + pick]
        walk[w, i] = e
        node[w] = dst[e]
    w, j = np.nonzero(walk >= 0)
    return np.where(np.arange(steps) <= j[:, None], walk[w], -1)


# --------------------------------------------------------------------------- validation


def _check_inputs(
    s: FloatArray, h: IntArray, t: IntArray, topics: IntArray, n: int, *, kernel: str, a: float, max_len: int
) -> None:
    """Reject inputs no kernel can pool, naming what arrived (caller bugs, hence ValueError)."""
    if s.ndim != 1 or h.shape != s.shape or t.shape != s.shape:
        raise ValueError(
            f"path_pool: scores, head, tail must all be [E]; got {s.shape}, {h.shape}, {t.shape}"
        )
    if kernel not in _KERNELS:
        raise ValueError(f"path_pool: unknown kernel {kernel!r}; expected one of {_KERNELS}")
    if a == 0:
        raise ValueError("path_pool: a must be nonzero (the bonus is s_min / (i * a))")
    if max_len < 1:
        raise ValueError(f"path_pool: max_len must be >= 1, got {max_len}")
    ids = np.concatenate([h, t, topics])
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(
            f"path_pool: entity ids must lie in 0..{n - 1} (num_nodes={n}); got {ids.min()}..{ids.max()}"
        )
    if kernel == "dijkstra" and s.size and (s.min() < 0 or s.max() > 1):
        raise ValueError(
            f"path_pool: dijkstra weighs edges 1 - score, so scores must lie in [0, 1]; "
            f"got {s.min():.4g}..{s.max():.4g} (apply a sigmoid to logits)"
        )
