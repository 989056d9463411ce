"""Path pooling: a hand-worked 6-entity graph, and the vectorised kernels against a networkx reference."""

from __future__ import annotations

import math
from itertools import pairwise

import networkx as nx
import pytest
import torch

from kgqa.errors import KgqaError
from kgqa.retrieval.evidence import path_pooling
from kgqa.retrieval.evidence.path_pooling import (
    hop_distance,
    path_pool,
    path_reach,
    path_rescore,
    positional_rerank,
    reselect,
)

# Topics 0 and 1. Triples (head -> tail, score):
#   t0: 0 -> 2 (.9)   t1: 2 -> 3 (.5)   t2: 0 -> 3 (.2)   t3: 1 -> 3 (.8)   t4: 3 -> 4 (.4)   t5: 5 -> 0 (.6)
HAND_HEAD = [0, 2, 0, 1, 3, 5]
HAND_TAIL = [2, 3, 3, 3, 4, 0]
HAND_SCORES = [0.9, 0.5, 0.2, 0.8, 0.4, 0.6]
HAND_A = 2.0  # s_min = .2, so the i-th triple of a path gains .1 / i
# Dijkstra (weight 1 - s). From 0: 0->2 [t0] mean .9; 0->3 [t0 t1] (.1 + .5 < .8 of t2) mean .7;
# 0->4 [t0 t1 t4] mean .6. From 1: 1->3 [t3] mean .8; 1->4 [t3 t4] mean .6. To 0: 5->0 [t5] mean .6.
#   t0 = max(.9 + .1, .7 + .1, .6 + .1) = 1.0      t1 = max(.7 + .05, .6 + .05) = .75
#   t2 is on no shortest path: alone, .2 + .1 = .3  t3 = max(.8 + .1, .6 + .1) = .9
#   t4 = max(.6 + .1/3 (from 0, 3rd), .6 + .05 (from 1, 2nd)) = .65             t5 = .6 + .1 = .7
HAND_DIJKSTRA = [1.0, 0.75, 0.3, 0.9, 0.65, 0.7]
# BFS adds every simple path: 0->3 [t2] mean .2 and 0->3->4 [t2 t4] mean .3, so t2 = .3 + .1 = .4
# (t4 gets .3 + .05 = .35 there, below its .65).
HAND_BFS = [1.0, 0.75, 0.4, 0.9, 0.65, 0.7]


def _hand(device: torch.device) -> tuple[torch.Tensor, ...]:
    return (
        torch.tensor(HAND_SCORES, device=device),
        torch.tensor(HAND_HEAD, device=device),
        torch.tensor(HAND_TAIL, device=device),
        torch.tensor([0, 1], device=device),
    )


def reference_pool(
    scores: list[float],
    head: list[int],
    tail: list[int],
    topics: list[int],
    num_nodes: int,
    *,
    kernel: str,
    a: float,
    directions: str,
    max_len: int = 4,
) -> list[float]:
    """Slow reference: networkx paths from each topic per orientation, mean + bonus, max per triple."""
    s_min = min(scores)
    out: list[float | None] = [None] * len(scores)
    flips = {"both": (False, True), "from": (False,), "to": (True,)}[directions]
    for flip in flips:
        edges = [((t, h) if flip else (h, t), i) for i, (h, t) in enumerate(zip(head, tail, strict=True))]
        for path in _reference_paths(edges, scores, topics, num_nodes, kernel=kernel, max_len=max_len):
            mean = sum(scores[i] for i in path) / len(path)
            for pos, i in enumerate(path, start=1):
                cand = mean + s_min / (pos * a)
                out[i] = cand if out[i] is None else max(out[i], cand)
    return [s + s_min / a if o is None else o for s, o in zip(scores, out, strict=True)]


def _reference_paths(
    edges: list[tuple[tuple[int, int], int]],
    scores: list[float],
    topics: list[int],
    num_nodes: int,
    *,
    kernel: str,
    max_len: int,
) -> list[list[int]]:
    """Triple-id paths from every topic: Dijkstra (best parallel triple kept) or all simple paths."""
    paths = []
    if kernel == "dijkstra":
        graph = nx.DiGraph()
        graph.add_nodes_from(range(num_nodes))
        for (u, v), i in edges:  # keep the highest-scored of parallel triples (lowest id on ties)
            if not graph.has_edge(u, v) or scores[i] > scores[graph.edges[u, v]["triple"]]:
                graph.add_edge(u, v, weight=1.0 - scores[i], triple=i)
        for topic in topics:
            for target, nodes in nx.single_source_dijkstra_path(graph, topic).items():
                if target != topic:
                    paths.append([graph.edges[u, v]["triple"] for u, v in pairwise(nodes)])
    else:
        multi = nx.MultiDiGraph()
        multi.add_nodes_from(range(num_nodes))
        for (u, v), i in edges:
            multi.add_edge(u, v, key=i)
        for topic in topics:
            for target in multi.nodes:
                if target != topic:
                    for path in nx.all_simple_edge_paths(multi, topic, target, cutoff=max_len):
                        paths.append([k for _, _, k in path])
    return paths


def _random_graph(seed: int, num_nodes: int, num_edges: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    head = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    tail = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    head = torch.cat([head, head[:3]])  # guaranteed parallel triples (different scores)
    tail = torch.cat([tail, tail[:3]])
    scores = torch.rand(head.numel(), generator=gen)
    topic = torch.arange(1 + seed % 3)
    return scores, head, tail, topic


def test_path_pooling_matches_hand_computed_dijkstra_scores(device: torch.device) -> None:
    scores, head, tail, topic = _hand(device)
    out = path_pool(scores, head, tail, topic, 6, a=HAND_A)
    assert out.device.type == device.type
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), torch.tensor(HAND_DIJKSTRA))


def test_path_pooling_matches_hand_computed_bfs_scores(device: torch.device) -> None:
    scores, head, tail, topic = _hand(device)
    out = path_pool(scores, head, tail, topic, 6, kernel="bfs", a=HAND_A)
    torch.testing.assert_close(out.cpu(), torch.tensor(HAND_BFS))


def test_path_pooling_keeps_unreachable_triple_as_single_path() -> None:
    # 0 -> 1 hangs off topic 0; 2 -> 3 is connected to no topic in either direction.
    scores = torch.tensor([0.6, 0.3])
    out = path_pool(scores, torch.tensor([0, 2]), torch.tensor([1, 3]), torch.tensor([0]), 4, a=1.5)
    torch.testing.assert_close(out, torch.tensor([0.6 + 0.3 / 1.5, 0.3 + 0.3 / 1.5]))


def test_path_pooling_without_topics_leaves_every_triple_alone() -> None:
    scores = torch.tensor([0.6, 0.3, 0.9])
    out = path_pool(
        scores, torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0]), torch.tensor([], dtype=torch.long), 3
    )
    torch.testing.assert_close(out, scores + 0.3)


def test_path_pooling_handles_empty_subgraph() -> None:
    empty = torch.tensor([], dtype=torch.long)
    assert path_pool(torch.tensor([]), empty, empty, torch.tensor([0]), 1).shape == (0,)


@pytest.mark.parametrize("seed", range(20))
def test_path_pooling_dijkstra_matches_networkx_reference(seed: int) -> None:
    num_nodes = 10 + seed
    scores, head, tail, topic = _random_graph(seed, num_nodes, 2 * num_nodes)
    directions = ("both", "from", "to")[seed % 3]
    a = (1.0, 0.5, 3.0)[seed % 3]
    out = path_pool(scores, head, tail, topic, num_nodes, a=a, directions=directions)
    expected = reference_pool(
        scores.tolist(), head.tolist(), tail.tolist(), topic.tolist(), num_nodes,
        kernel="dijkstra", a=a, directions=directions,
    )  # fmt: skip
    torch.testing.assert_close(out, torch.tensor(expected))


@pytest.mark.parametrize("seed", range(6))
def test_path_pooling_bfs_matches_networkx_reference(seed: int) -> None:
    num_nodes = 8 + seed
    scores, head, tail, topic = _random_graph(seed, num_nodes, 2 * num_nodes)
    max_len = 2 + seed % 3
    out = path_pool(scores, head, tail, topic, num_nodes, kernel="bfs", max_len=max_len)
    expected = reference_pool(
        scores.tolist(), head.tolist(), tail.tolist(), topic.tolist(), num_nodes,
        kernel="bfs", a=1.0, directions="both", max_len=max_len,
    )  # fmt: skip
    torch.testing.assert_close(out, torch.tensor(expected))


def test_path_pooling_random_walk_is_deterministic_for_seeded_generator() -> None:
    scores, head, tail, topic = _random_graph(7, 20, 60)

    def pooled(seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        return path_pool(scores, head, tail, topic, 20, kernel="random_walk", num_walks=16, generator=gen)

    torch.testing.assert_close(pooled(3), pooled(3), rtol=0, atol=0)


def test_path_pooling_random_walk_equals_dijkstra_on_a_chain() -> None:
    # One way out of every entity, so every walk follows the chain 0 -> 1 -> 2 -> 3 -> 4.
    scores = torch.tensor([0.9, 0.1, 0.5, 0.7])
    head, tail, topic = torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 3, 4]), torch.tensor([0])
    gen = torch.Generator().manual_seed(0)
    walked = path_pool(scores, head, tail, topic, 5, kernel="random_walk", num_walks=4, generator=gen)
    torch.testing.assert_close(walked, path_pool(scores, head, tail, topic, 5))


def test_path_pooling_rejects_scores_outside_unit_interval_for_dijkstra() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        path_pool(torch.tensor([2.0]), torch.tensor([0]), torch.tensor([1]), torch.tensor([0]), 2)


def test_path_pooling_rejects_zero_a() -> None:
    with pytest.raises(ValueError, match="nonzero"):
        path_pool(torch.tensor([0.5]), torch.tensor([0]), torch.tensor([1]), torch.tensor([0]), 2, a=0.0)


def test_path_pooling_bfs_refuses_path_explosion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(path_pooling, "MAX_BFS_PATHS", 3)
    scores, head, tail, topic = _hand(torch.device("cpu"))
    with pytest.raises(KgqaError, match="bfs") as info:
        path_pool(scores, head, tail, topic, 6, kernel="bfs")
    assert info.value.hint is not None and "dijkstra" in info.value.hint


def test_positional_rerank_puts_best_last() -> None:
    order = positional_rerank(torch.tensor([0.3, 0.9, 0.1, 0.7]), 3)
    assert order.tolist() == [0, 3, 1]
    assert positional_rerank(torch.tensor([0.3, 0.9]), 10).tolist() == [0, 1]


def test_reselect_picks_from_coarse_set_only() -> None:
    scores = torch.tensor([0.9, 0.8, 0.1, 0.7, 0.2])
    pooled = torch.tensor([0.1, 0.5, 5.0, 0.3, 0.9])  # 2 and 4 pool best but miss the coarse top-3
    picked = reselect(scores, pooled, coarse_n=3, k=2)
    assert picked.tolist() == [3, 1]


def test_path_reach_matches_hand_computed_products() -> None:
    scores, head, tail, topic = _hand(torch.device("cpu"))
    # From 0: 2 by t0 (.9); 3 by t0 t1 (.45 > .2 of t2); 4 by 3 (.45 * .4 = .18); 5 by t5 (.6).
    # Topic 1 reaches 3 by t3 (.8 > .45), so 4 gets .8 * .4 = .32. Topics are 1.
    expected = torch.tensor([1.0, 1.0, 0.9, 0.8, 0.32, 0.6, 0.0])
    torch.testing.assert_close(path_reach(scores, head, tail, topic, 7), expected)


@pytest.mark.parametrize("seed", range(10))
def test_path_reach_matches_networkx_best_product(seed: int) -> None:
    num_nodes = 8 + seed
    scores, head, tail, topic = _random_graph(seed, num_nodes, 2 * num_nodes)
    g = nx.Graph()
    g.add_nodes_from(range(num_nodes))
    for s, h, t in zip(scores.tolist(), head.tolist(), tail.tolist(), strict=True):
        w = -math.log(max(s, 1e-12))
        if h != t and (not g.has_edge(h, t) or g[h][t]["weight"] > w):
            g.add_edge(h, t, weight=w)
    dist = nx.multi_source_dijkstra_path_length(g, set(topic.tolist()))
    expected = torch.tensor([math.exp(-dist[v]) if v in dist else 0.0 for v in range(num_nodes)])
    torch.testing.assert_close(path_reach(scores, head, tail, topic, num_nodes), expected)


def test_path_rescore_is_the_per_hop_mean_of_the_best_path_ending_with_the_triple() -> None:
    scores, head, tail, topic = _hand(torch.device("cpu"))
    # reach (above) 1, 1, .9, .8, .32, .6; hop distance 0, 0, 1, 1, 2, 1.
    # t1 2->3: .5 * max(.9, .8) = .45 over 1 hop; t4 3->4: .4 * .8 = .32 over 2 hops -> sqrt.
    expected = torch.tensor([0.9, 0.45, 0.2, 0.8, math.sqrt(0.32), 0.6])
    torch.testing.assert_close(path_rescore(scores, head, tail, topic, 6), expected)


def test_path_rescore_zeroes_triples_no_topic_reaches() -> None:
    out = path_rescore(
        torch.tensor([0.9, 0.7]), torch.tensor([0, 2]), torch.tensor([1, 3]), torch.tensor([0]), 4
    )
    torch.testing.assert_close(out, torch.tensor([0.9, 0.0]))


def test_hop_distance_is_bfs_ignoring_direction() -> None:
    head, tail = torch.tensor([1, 1, 3, 5]), torch.tensor([0, 2, 2, 6])
    dist = hop_distance(head, tail, torch.tensor([0]), 7)
    assert dist.tolist() == [0, 1, 2, 3, 7, 7, 7]
