"""Display names for nameless nodes: a Freebase CVT node is named by its neighbours.

A CVT node (``m.02nqgpk``) stands for an n-ary fact ("Obama studied at Harvard Law School, J.D.,
1991") and has no name of its own, so evidence such as ``(Barack Obama, people.person.education,
m.02nqgpk)`` says nothing to a reader. Its neighbours in the question's subgraph say what it is;
the best-scored of them name it: ``m.02nqgpk [Barack Obama; Harvard Law School]``. The id stays in
front, so the evidence can still be traced to the graph.
"""

from __future__ import annotations

import torch

from kgqa.retrieval.subgraph import Subgraph

#: Neighbours named in a nameless node's display name.
NAMING_NEIGHBOURS = 3


def nameless_names(
    sub: Subgraph, named: torch.Tensor, names: dict[str, str], scores: torch.Tensor
) -> dict[str, str]:
    """Display names for the nameless entities of ``sub`` that have a named neighbour there.

    Args:
        sub: the question's subgraph.
        named: BoolTensor [N], False for nameless entities.
        names: entity id -> name, for the named ones.
        scores: FloatTensor [E], the triples' scores: the neighbours across the best triples name
            the node first.

    Returns:
        Entity id -> ``"<id> [<neighbour>; <neighbour>; ...]"`` (at most :data:`NAMING_NEIGHBOURS`),
        only for nameless entities with a named neighbour.
    """
    out: dict[str, str] = {}
    order = torch.argsort(scores, descending=True, stable=True)
    head, tail = sub.head[order], sub.tail[order]
    for entity in (~named).nonzero().flatten().tolist():
        touching = (head == entity) | (tail == entity)
        across = torch.where(head == entity, tail, head)[touching]  # best triples first
        neighbours: list[str] = []
        for other in across.tolist():
            name = names.get(sub.entity_ids[other], sub.entity_ids[other])
            if named[other] and name not in neighbours:
                neighbours.append(name)
        if neighbours:
            entity_id = sub.entity_ids[entity]
            out[entity_id] = f"{entity_id} [{'; '.join(neighbours[:NAMING_NEIGHBOURS])}]"
    return out
