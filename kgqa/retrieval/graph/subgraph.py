"""Topic-centred candidate subgraph (SubgraphRAG 3.1), pulled from the store hop by hop.

Each hop calls ``cypher/subgraph_hop.cypher`` on the new frontier, a chunk at a time; triples come back
as parallel arrays and are relabelled here to local ids 0..N-1 (topic entities first), so the
rest of retrieval works on tensors. Caps keep one question from pulling in the whole KB: hub
entities beyond the topics (more than ``max_degree`` relationships) are kept as endpoints but
not expanded, each expanded entity gives at most ``max_per_node`` triples, and at most
``max_triples`` triples are collected. Which triples a cap keeps is fixed by the kernel's order
(frontier position, then far end's id, type, head id), so the embedded store and Neo4j return the
same subgraph for the same question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from kgqa.config import RETRIEVAL_DEFAULTS
from kgqa.store import queries
from kgqa.store.protocol import GraphStore

#: Frontier entities per kernel call. A hop's rows are ordered by frontier position first, so the
#: calls in order, each capped by the budget left, return exactly the rows of one call over the
#: whole frontier, and once the budget is spent the rest of the frontier is never read (a hub
#: topic's 1,000 far ends are expanded only until their triples fill the budget).
FRONTIER_CHUNK = 128


@dataclass(frozen=True, slots=True)
class Subgraph:
    """Candidate triples as arrays over local ids.

    Attributes:
        entity_ids: local entity id -> ``Entity.id`` (topic entities come first).
        relation_types: local relation id -> relationship type (e.g. ``DIRECTED_BY``).
        head: LongTensor [E] local head ids; ``rel``: [E] local relation ids; ``tail``: [E].
        rel_eids: [E] element ids of the relationships (open them in Neo4j Browser).
        num_topics: the first ``num_topics`` local ids are the topic entities.
        topic_walks: the walk rule of the model reading it. ``False``: a question's walks never
            come back through a topic and a topic never answers (MetaQA); ``True``: walks may pass
            through and end at a topic ("the spouse of X 's spouse" is X, as in PathQuestion).
            ``kgqa train`` decides it from the training split
            (:mod:`retriever_training.walk_rule`); plans, walk triples, labels and the reader's
            candidates all follow it.
        topic_walks_if_needed: under "never back" only, a plan whose walks reach nothing without
            coming back through a topic walks back through it ("the wife of X 's husband" is X,
            "the sex of X 's husband 's wife" is X's), while a plan that reaches others keeps to
            them ("X 's co-stars" are the others). Set by the name-match planner's retriever for
            a question that chains relation nouns through "of" and "'s" (it has no training split
            to decide ``topic_walks`` from; a chain of kin nouns comes home, "what instruments did
            X play" does not, though Freebase holds its relation both ways).
    """

    entity_ids: list[str]
    relation_types: list[str]
    head: torch.Tensor
    rel: torch.Tensor
    tail: torch.Tensor
    rel_eids: list[str]
    num_topics: int
    topic_walks: bool = False
    topic_walks_if_needed: bool = False

    @property
    def num_entities(self) -> int:
        return len(self.entity_ids)

    @property
    def num_triples(self) -> int:
        return int(self.head.numel())

    @property
    def edge_index(self) -> torch.Tensor:
        """LongTensor [2, E]: row 0 = head, row 1 = tail."""
        return torch.stack([self.head, self.tail])

    @property
    def topic(self) -> torch.Tensor:
        """LongTensor [T] local ids of the topic entities."""
        return torch.arange(self.num_topics)

    def candidate_mask(self) -> torch.Tensor:
        """BoolTensor [N]: entities that may answer the question (every one but the topics, and
        the topics too under ``topic_walks``); also where a step of a question's walks may end."""
        mask = torch.ones(self.num_entities, dtype=torch.bool)
        mask[: self.num_topics] = self.topic_walks
        return mask

    def local_ids(self) -> dict[str, int]:
        """``Entity.id`` -> local entity id, for the entities of this subgraph."""
        return {entity: i for i, entity in enumerate(self.entity_ids)}

    def walking_back(self) -> Subgraph | None:
        """This subgraph under the permissive rule, for the plans that reach nothing under its
        own (``topic_walks_if_needed``); ``None`` where there is no such second rule."""
        if self.topic_walks_if_needed and not self.topic_walks:
            return replace(self, topic_walks=True)
        return None

    def mediator_steps(self, named: torch.Tensor) -> torch.Tensor:
        """BoolTensor [2R]: per signed step (``2 * rel + backward``, as plans spell them), whether
        every triple it crosses here leads to a nameless node (``named`` [N] False there: a
        Freebase CVT such as a film performance, named by its mid); False for a step that crosses
        none.

        Why: such a node stands for one fact of several parts ("X starred in Y as Z"), so a step
        into it and the step out of it name one relation between named things ("film starring",
        then "performance actor": who played in Y)."""
        steps = 2 * len(self.relation_types)
        signed = torch.cat([2 * self.rel, 2 * self.rel + 1])
        reached = torch.cat([self.tail, self.head])
        crossed = torch.zeros(steps, dtype=torch.long).index_add_(0, signed, torch.ones_like(signed))
        to_named = torch.zeros(steps, dtype=torch.long).index_add_(0, signed, named[reached].long())
        return (crossed > 0) & (to_named == 0)

    def triple(self, i: int) -> tuple[str, str, str]:
        """Triple ``i`` as (head id, relationship type, tail id)."""
        return (
            self.entity_ids[int(self.head[i])],
            self.relation_types[int(self.rel[i])],
            self.entity_ids[int(self.tail[i])],
        )


def extract_subgraph(
    store: GraphStore,
    topic_ids: Sequence[str],
    *,
    hops: int = RETRIEVAL_DEFAULTS.hops,
    max_triples: int = RETRIEVAL_DEFAULTS.max_triples,
    max_degree: int = RETRIEVAL_DEFAULTS.max_degree,
    max_per_node: int = RETRIEVAL_DEFAULTS.max_per_node,
) -> Subgraph:
    """Collect the triples within ``hops`` hops of the topics, both directions, with caps.

    Args:
        store: the graph store.
        topic_ids: ``Entity.id`` of the topic entities (always expanded, whatever their degree).
        hops: number of hops (2 by default; MetaQA 3-hop questions need 3).
        max_triples: cap on the triples collected over all hops.
        max_degree: entities reached later with more relationships than this are not expanded.
        max_per_node: cap on the triples one expanded entity contributes per hop, so a hub topic
            leaves budget for the entities after it.
    """
    kernel = queries.get("subgraph_hop")
    local: dict[str, int] = {t: i for i, t in enumerate(dict.fromkeys(topic_ids))}
    types: dict[str, int] = {}
    head: list[int] = []
    rel: list[int] = []
    tail: list[int] = []
    eids: list[str] = []
    seen: set[str] = set()
    frontier = list(local)
    expanded = set(frontier)
    for hop in range(hops):
        budget = max_triples - len(eids)
        if not frontier or budget <= 0:
            break
        reached: list[str] = []
        for start in range(0, len(frontier), FRONTIER_CHUNK):
            if budget <= 0:  # later frontier positions sort after every row already taken
                break
            params = {
                "frontier_ids": frontier[start : start + FRONTIER_CHUNK],
                "max_degree": None if hop == 0 else max_degree,
                "max_per_node": max_per_node,
                "max_triples": budget,
            }
            row = store.run(kernel, params)[0]
            budget -= len(row["r_eids"])
            for h, r, t, eid in zip(row["h_ids"], row["r_types"], row["t_ids"], row["r_eids"], strict=True):
                if eid in seen:
                    continue
                seen.add(eid)
                for entity in (h, t):
                    if entity not in local:
                        local[entity] = len(local)
                        reached.append(entity)
                head.append(local[h])
                rel.append(types.setdefault(r, len(types)))
                tail.append(local[t])
                eids.append(eid)
        frontier = [e for e in reached if e not in expanded]
        expanded.update(frontier)
    return Subgraph(
        entity_ids=list(local),
        relation_types=list(types),
        head=torch.tensor(head, dtype=torch.long),
        rel=torch.tensor(rel, dtype=torch.long),
        tail=torch.tensor(tail, dtype=torch.long),
        rel_eids=eids,
        num_topics=len(dict.fromkeys(topic_ids)),
    )
