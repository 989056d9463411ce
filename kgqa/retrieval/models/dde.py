"""Directional distance encoding (DDE, SubgraphRAG 3.1): parameter-free structural features.

Each entity starts from a one-hot "is it a topic entity" vector; forward rounds average the
vectors of the heads pointing at an entity, reverse rounds average those of the tails it points
at. Concatenating all rounds tells the triple scorer how far, and in which direction, a triple
sits from the topic entities, which text embeddings alone cannot express.

Everything here is a scatter-mean over the edge list (no Python loop over edges or entities) and
follows the device of its inputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

#: Width of one round's encoding: column 0 = "topic entity", column 1 = "not a topic entity".
ROUND_DIM = 2


def dde_dim(*, forward_rounds: int = 2, reverse_rounds: int = 2) -> int:
    """Width of :func:`dde`'s output: ``2 * (1 + forward_rounds + reverse_rounds)`` (10 by default)."""
    return ROUND_DIM * (1 + forward_rounds + reverse_rounds)


def _in_degree(dst: Tensor, num_nodes: int, like: Tensor) -> Tensor:
    """Messages arriving at each node, clamped to 1 so entities without any divide by 1: [N]."""
    deg = like.new_zeros(num_nodes).index_add_(0, dst, like.new_ones(dst.numel()))
    return deg.clamp_(min=1)


def _mean_messages(x: Tensor, src: Tensor, dst: Tensor, deg: Tensor) -> Tensor:
    """out[v] = mean of x[src[i]] over the edges i with dst[i] == v (zeros where none): [N, C].

    Parallel edges are separate messages, as in PyG ``MessagePassing(aggr="mean")``.
    """
    return x.new_zeros(x.shape).index_add_(0, dst, x[src]) / deg[:, None]


def dde(
    edge_index: Tensor,
    topic: Tensor,
    num_nodes: int,
    *,
    forward_rounds: int = 2,
    reverse_rounds: int = 2,
) -> Tensor:
    """Directional distance encoding of every entity of one question's subgraph.

    ``s^(0)`` is the one-hot topic indicator; forward round ``l + 1`` sets
    ``s_e = MEAN{s_e'^(l) : (e', r, e)}`` (head -> tail), reverse rounds restart from ``s^(0)``
    and set ``s_e = MEAN{s_e'^(l) : (e, r, e')}`` (tail -> head). An entity that receives no
    message in a round gets zeros for that round.

    Args:
        edge_index: LongTensor [2, E]; row 0 = head, row 1 = tail, local ids in ``0..N-1``.
            Duplicate (parallel) edges count as separate messages.
        topic: LongTensor [T] local ids of the topic entities (duplicates are harmless; may be empty).
        num_nodes: N, passed explicitly so isolated entities keep a row and no host sync is needed.
        forward_rounds: F, number of head -> tail rounds.
        reverse_rounds: R, number of tail -> head rounds.

    Returns:
        FloatTensor [N, 2 * (1 + F + R)] on ``edge_index``'s device, laid out as
        ``[s^(0) || fwd_1 .. fwd_F || rev_1 .. rev_R]``, each block being
        (topic mass, non-topic mass) columns.

    Raises:
        ValueError: if ``edge_index`` is not shaped [2, E] or ``topic`` is not 1-D.
    """
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be shaped [2, E], got {list(edge_index.shape)}")
    if topic.dim() != 1:
        raise ValueError(f"topic must be a 1-D tensor of local ids, got shape {list(topic.shape)}")
    head, tail = edge_index[0], edge_index[1]
    is_topic = torch.zeros(num_nodes, dtype=torch.bool, device=edge_index.device)
    is_topic[topic.to(edge_index.device)] = True
    # Column 0 = topic, column 1 = the others (one_hot of "not a topic").
    s0 = F.one_hot((~is_topic).long(), num_classes=ROUND_DIM).to(torch.get_default_dtype())

    rounds = [s0]
    for src, dst, n_rounds in ((head, tail, forward_rounds), (tail, head, reverse_rounds)):
        deg = _in_degree(dst, num_nodes, s0)
        s = s0
        for _ in range(n_rounds):
            s = _mean_messages(s, src, dst, deg)
            rounds.append(s)
    return torch.cat(rounds, dim=1)


def triple_features(dde_x: Tensor, edge_index: Tensor) -> Tensor:
    """Per-triple structural feature ``z_tau = [s_h || s_t]``.

    Args:
        dde_x: [N, D] entity encodings from :func:`dde`.
        edge_index: LongTensor [2, E]; row 0 = head, row 1 = tail.

    Returns:
        [E, 2 * D]: the head's encoding followed by the tail's.
    """
    return torch.cat([dde_x[edge_index[0]], dde_x[edge_index[1]]], dim=1)
