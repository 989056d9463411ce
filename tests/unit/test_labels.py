"""Weak labels: triples on shortest topic -> answer paths, checked by hand and against networkx."""

from __future__ import annotations

import random

import networkx as nx
import torch
from subgraphs import make_subgraph, random_case

from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.labels import relation_path_labels, shortest_path_labels, weak_labels
from kgqa.types import QAExample

# A MetaQA-like 3-hop case, topic movie e0, question "languages of films sharing directors with e0":
#   0 e0 -DIRECTED_BY-> e1 (director)      3 e0 -HAS_TAGS-> e4 (tag)
#   1 e2 -DIRECTED_BY-> e1 (other film)    4 e5 -HAS_TAGS-> e4 (film sharing only a tag)
#   2 e2 -IN_LANGUAGE-> e3 (answer)        5 e5 -IN_LANGUAGE-> e3
#   6 e0 -IN_LANGUAGE-> e6 (e0's own language, not an answer)
#   7 e2 -HAS_GENRE-> e7
DIRECTOR_WALK = (
    [(0, 1), (2, 1), (2, 3), (0, 4), (5, 4), (5, 3), (0, 6), (2, 7)],
    [
        "DIRECTED_BY",
        "DIRECTED_BY",
        "IN_LANGUAGE",
        "HAS_TAGS",
        "HAS_TAGS",
        "IN_LANGUAGE",
        "IN_LANGUAGE",
        "HAS_GENRE",
    ],
)


def test_shortest_path_labels_mark_both_directions_and_all_shortest_paths() -> None:
    # 0 -> 1 -> 3, 0 <- 2 -> 3 (two shortest 2-hop paths, one edge reversed), 0 -> 4 -> 5 -> 3 (longer)
    edges = [(0, 1), (1, 3), (2, 0), (2, 3), (0, 4), (4, 5), (5, 3), (1, 6)]
    labels = shortest_path_labels(make_subgraph(7, edges), ["e3"])
    assert labels.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


def test_shortest_path_labels_empty_when_answer_missing_or_is_topic() -> None:
    sub = make_subgraph(3, [(0, 1), (1, 2)])
    assert shortest_path_labels(sub, ["nope"]).sum() == 0
    assert shortest_path_labels(sub, ["e0"]).sum() == 0


def _reference(sub: Subgraph, answers: list[str]) -> torch.Tensor:
    g = nx.MultiGraph()
    g.add_nodes_from(range(sub.num_entities))
    for i, (h, t) in enumerate(zip(sub.head.tolist(), sub.tail.tolist(), strict=True)):
        g.add_edge(h, t, key=i)
    on_path: set[frozenset[int]] = set()
    for t in range(sub.num_topics):
        for a in (sub.entity_ids.index(x) for x in answers):
            if a < sub.num_topics or not nx.has_path(g, t, a):
                continue
            for path in nx.all_shortest_paths(g, t, a):
                on_path.update(frozenset(p) for p in zip(path, path[1:], strict=False))
    return torch.tensor(
        [
            float(frozenset((h, t)) in on_path)
            for h, t in zip(sub.head.tolist(), sub.tail.tolist(), strict=True)
        ]
    )


def test_shortest_path_labels_match_networkx_on_random_graphs() -> None:
    rng = random.Random(7)
    for _ in range(30):
        sub, answers = random_case(rng, max_nodes=14, max_edges=30)
        assert torch.equal(shortest_path_labels(sub, answers), _reference(sub, answers))


def test_relation_path_labels_follow_the_named_relations_in_either_direction() -> None:
    sub = make_subgraph(8, DIRECTOR_WALK[0], rels=DIRECTOR_WALK[1])
    path = ("directed_by", "directed_by", "in_language")
    # Only the director walk 0 -> 1 -> 2 -> 3; the tag walk 0 -> 4 -> 5 -> 3 is just as short.
    assert relation_path_labels(sub, ["e3"], [path]).tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert shortest_path_labels(sub, ["e3"]).tolist() == [1, 1, 1, 1, 1, 1, 0, 0]
    # Two gold paths: the union of their walks.
    tags = ("has_tags", "has_tags", "in_language")
    assert relation_path_labels(sub, ["e3"], [path, tags]).tolist() == [1, 1, 1, 1, 1, 1, 0, 0]


def test_relation_path_labels_keep_a_longer_gold_walk_than_the_shortest_path() -> None:
    # The answer e3 is also one step from the topic (triple 8): shortest paths label only that step.
    edges, rels = DIRECTOR_WALK[0] + [(0, 3)], DIRECTOR_WALK[1] + ["IN_LANGUAGE"]
    sub = make_subgraph(8, edges, rels=rels)
    assert shortest_path_labels(sub, ["e3"]).tolist() == [0] * 8 + [1]
    labels = relation_path_labels(sub, ["e3"], [("directed_by", "directed_by", "in_language")])
    assert labels.tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 0]


def test_relation_path_labels_empty_when_a_relation_or_answer_is_missing() -> None:
    sub = make_subgraph(8, DIRECTOR_WALK[0], rels=DIRECTOR_WALK[1])
    assert relation_path_labels(sub, ["e3"], [("written_by", "written_by", "in_language")]).sum() == 0
    assert relation_path_labels(sub, ["e7"], [("directed_by", "directed_by", "in_language")]).sum() == 0
    assert relation_path_labels(sub, ["nope"], [("directed_by",)]).sum() == 0
    assert relation_path_labels(sub, ["e0"], [("in_language",)]).sum() == 0  # a topic is no answer
    assert relation_path_labels(sub, ["e3"], [()]).sum() == 0


def test_weak_labels_fall_back_to_shortest_paths_when_the_gold_path_finds_nothing() -> None:
    sub = make_subgraph(8, DIRECTOR_WALK[0], rels=DIRECTOR_WALK[1])

    def example(*paths: tuple[str, ...]) -> QAExample:
        return QAExample("q:0", "q", ("e0",), ("e3",), line=0, relation_paths=paths)

    assert weak_labels(sub, example(("directed_by", "directed_by", "in_language"))).sum() == 3
    assert torch.equal(weak_labels(sub, example(("written_by",))), shortest_path_labels(sub, ["e3"]))
    assert torch.equal(weak_labels(sub, example()), shortest_path_labels(sub, ["e3"]))


def _walk_reference(sub: Subgraph, answers: list[str], path: tuple[str, ...]) -> torch.Tensor:
    """Enumerate every walk along ``path`` (either direction, never back to a topic) by brute force."""
    wanted = {sub.entity_ids.index(a) for a in answers} - set(range(sub.num_topics))
    triples = list(zip(sub.head.tolist(), sub.rel.tolist(), sub.tail.tolist(), strict=True))
    walks: list[tuple[int, list[int]]] = [(t, []) for t in range(sub.num_topics)]
    for name in path:
        walks = [
            (other, used + [i])
            for end, used in walks
            for i, (h, r, t) in enumerate(triples)
            if sub.relation_types[r] == name.upper() and end in (h, t)
            for other in {t if end == h else h}
            if other >= sub.num_topics
        ]
    labels = torch.zeros(sub.num_triples)
    for end, used in walks:
        if end in wanted:
            labels[used] = 1.0
    return labels


def test_relation_path_labels_match_brute_force_walks_on_random_graphs() -> None:
    rng = random.Random(11)
    for _ in range(40):
        sub, answers = random_case(rng, max_nodes=12, max_edges=25, relations="AB")
        path = tuple(rng.choice("ab") for _ in range(rng.randint(1, 3)))
        assert torch.equal(relation_path_labels(sub, answers, [path]), _walk_reference(sub, answers, path))
