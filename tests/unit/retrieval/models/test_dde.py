"""DDE: a hand-computed 5-entity graph and a vectorised-vs-loop comparison on random graphs."""

from __future__ import annotations

import pytest
import torch

from kgqa.retrieval.models.dde import dde, dde_dim, triple_features

# 0 -> 1, 0 -> 2 (twice), 1 -> 2, 2 -> 3, 3 -> 1; entity 4 is isolated; topics {0, 3}.
HAND_EDGES = [[0, 0, 0, 1, 2, 3], [1, 2, 2, 2, 3, 1]]
HAND_TOPIC = [0, 3]
# Rows: entities. Column pairs (topic, other): s0 | fwd1 | fwd2 | rev1 | rev2, worked out by hand:
#   fwd1[2] = mean(s0[0], s0[0], s0[1]) = (2/3, 1/3) (the parallel edge counts twice)
#   fwd2[1] = mean(fwd1[0], fwd1[3]) = mean((0, 0), (0, 1)) = (0, 1/2)
#   rev2[0] = mean(rev1[1], rev1[2], rev1[2]) = mean((0, 1), (1, 0), (1, 0)) = (2/3, 1/3)
HAND_EXPECTED = [
    [1, 0, 0, 0, 0, 0, 0, 1, 2 / 3, 1 / 3],
    [0, 1, 1, 0, 0, 1 / 2, 0, 1, 1, 0],
    [0, 1, 2 / 3, 1 / 3, 1 / 3, 0, 1, 0, 0, 1],
    [1, 0, 0, 1, 2 / 3, 1 / 3, 0, 1, 0, 1],
    [0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
]


def reference_dde(
    edges: list[tuple[int, int]], topic: set[int], num_nodes: int, forward: int, reverse: int
) -> list[list[float]]:
    """Slow reference: per-node Python loops over adjacency lists."""
    s0 = [[1.0, 0.0] if v in topic else [0.0, 1.0] for v in range(num_nodes)]
    incoming: list[list[int]] = [[] for _ in range(num_nodes)]
    outgoing: list[list[int]] = [[] for _ in range(num_nodes)]
    for h, t in edges:
        incoming[t].append(h)
        outgoing[h].append(t)
    blocks = [s0]
    for neighbours, rounds in ((incoming, forward), (outgoing, reverse)):
        s = s0
        for _ in range(rounds):
            new = []
            for v in range(num_nodes):
                nb = neighbours[v]
                if nb:
                    new.append([sum(s[u][c] for u in nb) / len(nb) for c in range(2)])
                else:
                    new.append([0.0, 0.0])
            s = new
            blocks.append(s)
    return [[x for block in blocks for x in block[v]] for v in range(num_nodes)]


def test_dde_matches_hand_computed_encoding(device: torch.device) -> None:
    edge_index = torch.tensor(HAND_EDGES, device=device)
    out = dde(edge_index, torch.tensor(HAND_TOPIC, device=device), 5)
    assert out.shape == (5, 10)
    assert out.device.type == device.type
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), torch.tensor(HAND_EXPECTED))


def test_dde_width_follows_round_counts(device: torch.device) -> None:
    edge_index = torch.tensor(HAND_EDGES, device=device)
    out = dde(edge_index, torch.tensor(HAND_TOPIC, device=device), 5, forward_rounds=3, reverse_rounds=0)
    assert out.shape == (5, dde_dim(forward_rounds=3, reverse_rounds=0)) == (5, 8)
    torch.testing.assert_close(out[:, :6].cpu(), torch.tensor(HAND_EXPECTED)[:, :6])


def test_dde_gives_only_non_topic_column_when_no_topic(device: torch.device) -> None:
    edge_index = torch.tensor(HAND_EDGES, device=device)
    out = dde(edge_index, torch.tensor([], dtype=torch.long, device=device), 5)
    assert torch.all(out[:, 0::2] == 0)


def test_dde_handles_graph_without_edges(device: torch.device) -> None:
    out = dde(torch.empty(2, 0, dtype=torch.long, device=device), torch.tensor([1], device=device), 3)
    expected = torch.zeros(3, 10)
    expected[:, :2] = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    torch.testing.assert_close(out.cpu(), expected)


@pytest.mark.parametrize("seed", range(5))
def test_dde_matches_loop_reference_on_random_graphs(seed: int, device: torch.device) -> None:
    gen = torch.Generator().manual_seed(seed)
    num_nodes = 30
    num_edges = 60
    # Nodes 25..29 never appear in an edge (isolated); duplicates arise from sampling with replacement.
    edge_index = torch.randint(0, 25, (2, num_edges), generator=gen)
    edge_index = torch.cat([edge_index, edge_index[:, :10]], dim=1)  # guaranteed parallel edges
    topic = torch.randint(0, num_nodes, (3,), generator=gen)
    out = dde(edge_index.to(device), topic.to(device), num_nodes, forward_rounds=3, reverse_rounds=2)
    edges = list(zip(edge_index[0].tolist(), edge_index[1].tolist(), strict=True))
    expected = reference_dde(edges, set(topic.tolist()), num_nodes, 3, 2)
    torch.testing.assert_close(out.cpu(), torch.tensor(expected))


def test_dde_rejects_edge_index_of_wrong_shape() -> None:
    with pytest.raises(ValueError, match=r"\[2, E\]"):
        dde(torch.zeros(3, 4, dtype=torch.long), torch.tensor([0]), 4)


def test_triple_features_concatenates_head_and_tail_encodings(device: torch.device) -> None:
    edge_index = torch.tensor(HAND_EDGES, device=device)
    x = dde(edge_index, torch.tensor(HAND_TOPIC, device=device), 5)
    z = triple_features(x, edge_index)
    assert z.shape == (6, 20)
    expected = torch.tensor(HAND_EXPECTED)
    torch.testing.assert_close(z[4].cpu(), torch.cat([expected[2], expected[3]]))  # triple 2 -> 3
