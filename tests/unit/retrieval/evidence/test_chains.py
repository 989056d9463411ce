"""ReG evidence chains: hand-worked graphs of 3-8 entities, plus invariants on seeded random graphs."""

from __future__ import annotations

import pytest
import torch
from evidence_graphs import make_graph, summary

from kgqa.errors import KgqaError
from kgqa.retrieval.evidence import chains
from kgqa.retrieval.evidence.chains import evidence_chains
from kgqa.retrieval.evidence.items import EvidenceGraph

# Topic Jaws (0). Triples (head -relation-> tail, score):
#   t0: Jaws -directed_by-> Spielberg (.9)     t1: E.T. -directed_by-> Spielberg (.6)
#   t2: The Terminal -directed_by-> Spielberg (.3)
#   t3: Jaws -release_year-> 1975 (.5)         t4: Peter Benchley -wrote-> Jaws (novel) (.2)
FILMS = ["Jaws", "Spielberg", "E.T.", "The Terminal", "1975", "Peter Benchley", "Jaws (novel)"]
FILM_TRIPLES = [
    (0, "directed_by", 1, 0.9),
    (2, "directed_by", 1, 0.6),
    (3, "directed_by", 1, 0.3),
    (0, "release_year", 4, 0.5),
    (5, "wrote", 6, 0.2),
]


def test_evidence_chains_expand_backward_steps_and_merge_answers() -> None:
    # From Jaws, 2 hops. Jaws -> Spielberg (t0, forward); at Spielberg, t1 and t2 end there, so
    # they are walked backwards to E.T. and The Terminal; t0 itself would revisit Jaws.
    #   [t0 t1] and [t0 t2]: same root, same relation path (directed_by ->, directed_by <-),
    #   different ends -> one line, triples t0 t1 t2, score (.9 + .6 + .3) / 3 = .6.
    #   [t3]: Jaws -> 1975 has no extension (maximal), score .5.
    #   [t0] alone is a prefix of the kept chains, so it is no line of its own.
    # t4 touches no chain (not connected to Jaws): single-triple line, .2.
    # Ascending: .2, .5, .6.
    items = evidence_chains(make_graph(FILMS, FILM_TRIPLES, [0]), max_hops=2)
    assert summary(items) == [
        ("Peter Benchley -> wrote -> Jaws (novel)", (4,), pytest.approx(0.2)),
        ("Jaws -> release_year -> 1975", (3,), pytest.approx(0.5)),
        (
            "Jaws -> directed_by -> Spielberg <- directed_by <- E.T. | The Terminal",
            (0, 1, 2),
            pytest.approx(0.6),
        ),
    ]
    assert items[-1].entities == (0, 1, 2, 3)


def test_evidence_chains_respect_hop_limit_and_keep_unreached_triples() -> None:
    # One hop: the chains are [t0] (.9) and [t3] (.5); t1, t2 (two hops from Jaws) and t4
    # (unconnected) are single-triple lines read head -> tail. Ascending: .2 .3 .5 .6 .9.
    items = evidence_chains(make_graph(FILMS, FILM_TRIPLES, [0]), max_hops=1)
    assert summary(items) == [
        ("Peter Benchley -> wrote -> Jaws (novel)", (4,), pytest.approx(0.2)),
        ("The Terminal -> directed_by -> Spielberg", (2,), pytest.approx(0.3)),
        ("Jaws -> release_year -> 1975", (3,), pytest.approx(0.5)),
        ("E.T. -> directed_by -> Spielberg", (1,), pytest.approx(0.6)),
        ("Jaws -> directed_by -> Spielberg", (0,), pytest.approx(0.9)),
    ]


def test_evidence_chains_follow_forward_steps_up_to_the_hop_limit() -> None:
    # A chain 0 -> 1 -> 2 -> 3 with topic 0; scores .8 .4 .7.
    #   max_hops 3: one chain [t0 t1 t2], mean (.8 + .4 + .7) / 3 = .6333.
    #   max_hops 2: chain [t0 t1], mean (.8 + .4) / 2 = .6; t2 is three hops out -> single line .7.
    names = ["A", "B", "C", "D"]
    triples = [(0, "r1", 1, 0.8), (1, "r2", 2, 0.4), (2, "r3", 3, 0.7)]
    graph = make_graph(names, triples, [0])
    assert summary(evidence_chains(graph, max_hops=3)) == [
        ("A -> r1 -> B -> r2 -> C -> r3 -> D", (0, 1, 2), pytest.approx(1.9 / 3))
    ]
    assert summary(evidence_chains(graph, max_hops=2)) == [
        ("A -> r1 -> B -> r2 -> C", (0, 1), pytest.approx(0.6)),
        ("C -> r3 -> D", (2,), pytest.approx(0.7)),
    ]


def test_evidence_chains_reach_a_topic_that_is_a_tail() -> None:
    # Topic 0 is the tail of both triples: 2 -r2-> 1 -r1-> 0. The chain from 0 walks both
    # backwards and still reads from the topic: 0 <- r1 <- 1 <- r2 <- 2, mean (.3 + .7) / 2 = .5.
    graph = make_graph(["T", "M", "F"], [(1, "r1", 0, 0.3), (2, "r2", 1, 0.7)], [0])
    assert summary(evidence_chains(graph, max_hops=2)) == [
        ("T <- r1 <- M <- r2 <- F", (0, 1), pytest.approx(0.5))
    ]


def test_evidence_chains_never_repeat_an_entity_on_a_cycle() -> None:
    # Triangle A -r01-> B -r12-> C -r20-> A with topic A and a generous hop budget (5).
    #   Forward: [t0 t1] reaches C, whose only other step (t2) goes back to A -> stop.
    #   Backward: [t2 t1] reaches B (C <- ... walked t2 backwards, then t1 backwards), stop.
    #   Scores .9 .5 .4: means (.9 + .5) / 2 = .7 and (.4 + .5) / 2 = .45.
    graph = make_graph(["A", "B", "C"], [(0, "r01", 1, 0.9), (1, "r12", 2, 0.5), (2, "r20", 0, 0.4)], [0])
    items = evidence_chains(graph, max_hops=5)
    assert summary(items) == [
        ("A <- r20 <- C <- r12 <- B", (2, 1), pytest.approx(0.45)),
        ("A -> r01 -> B -> r12 -> C", (0, 1), pytest.approx(0.7)),
    ]
    assert all(len(set(item.entities)) == len(item.entities) for item in items)


def test_evidence_chains_merge_answers_with_different_middle_entities() -> None:
    # Obama -child-> Malia -school-> Sidwell; Obama -child-> Sasha -school-> Sidwell Lower.
    # Same root and relation path: one line, each position lists its entities in order met;
    # triples read step by step (t0 t2 | t1 t3); score (.8 + .6 + .4 + .2) / 4 = .5.
    names = ["Obama", "Malia", "Sasha", "Sidwell", "Sidwell Lower"]
    triples = [(0, "child", 1, 0.8), (1, "school", 3, 0.4), (0, "child", 2, 0.6), (2, "school", 4, 0.2)]
    items = evidence_chains(make_graph(names, triples, [0]), max_hops=2)
    assert summary(items) == [
        (
            "Obama -> child -> Malia | Sasha -> school -> Sidwell | Sidwell Lower",
            (0, 2, 1, 3),
            pytest.approx(0.5),
        )
    ]
    assert items[0].entities == (0, 1, 2, 3, 4)


def test_evidence_chains_place_lines_of_different_topics_with_a_common_end_together() -> None:
    # Topics A (0) and B (1), one hop. Lines:
    #   A -r1-> X (.9)   B -r2-> X (.2)   A -r3-> Y (.5)   B -r4-> Z (.6)
    # A..X and B..X come from different topics and both end at X: one block, best .9.
    # Blocks ascending by best line: [A..Y .5], [B..Z .6], [B..X .2, A..X .9].
    # (Plain ascending order would be .2 .5 .6 .9.)
    names = ["A", "B", "X", "Y", "Z"]
    triples = [(0, "r1", 2, 0.9), (1, "r2", 2, 0.2), (0, "r3", 3, 0.5), (1, "r4", 4, 0.6)]
    items = evidence_chains(make_graph(names, triples, [0, 1]), max_hops=1)
    assert [item.text for item in items] == ["A -> r3 -> Y", "B -> r4 -> Z", "B -> r2 -> X", "A -> r1 -> X"]


def test_evidence_chains_do_not_group_lines_of_one_topic_by_common_end() -> None:
    # Topic A only: A -r1-> X (.9), A -r5-> X (.2), A -r3-> Y (.5). Two lines end at X but share
    # their root, so there is no multi-entity block: plain ascending .2 .5 .9 (a block would
    # give .5 .2 .9).
    triples = [(0, "r1", 1, 0.9), (0, "r5", 1, 0.2), (0, "r3", 2, 0.5)]
    items = evidence_chains(make_graph(["A", "X", "Y"], triples, [0]), max_hops=1)
    assert [item.triples for item in items] == [(1,), (2,), (0,)]


def test_evidence_chains_keep_self_loops_and_everything_without_topics() -> None:
    # A self-loop at the topic repeats its entity, so no chain takes it: single line. With no
    # topics at all every triple is a single line, ascending.
    triples = [(0, "same_as", 0, 0.7), (0, "r", 1, 0.1)]
    with_topic = evidence_chains(make_graph(["A", "B"], triples, [0]), max_hops=2)
    assert summary(with_topic) == [
        ("A -> r -> B", (1,), pytest.approx(0.1)),
        ("A -> same_as -> A", (0,), pytest.approx(0.7)),
    ]
    no_topic = evidence_chains(make_graph(["A", "B"], triples, []), max_hops=2)
    assert [item.triples for item in no_topic] == [(1,), (0,)]


def test_evidence_chains_handle_empty_graph() -> None:
    assert evidence_chains(make_graph(["A"], [], [0]), max_hops=2) == []


def test_evidence_chains_reject_zero_hops() -> None:
    with pytest.raises(ValueError, match="max_hops"):
        evidence_chains(make_graph(FILMS, FILM_TRIPLES, [0]), max_hops=0)


def test_evidence_chains_refuse_chain_explosion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chains, "MAX_CHAINS", 1)
    with pytest.raises(KgqaError, match="chain expansion") as info:
        evidence_chains(make_graph(FILMS, FILM_TRIPLES, [0]), max_hops=2)
    assert info.value.hint is not None and "chain_hops" in info.value.hint


@pytest.mark.parametrize("seed", range(10))
def test_evidence_chains_cover_every_triple_and_stay_within_budget(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    num_nodes, num_triples, max_hops = 8, 14, 1 + seed % 3
    head = torch.randint(0, num_nodes, (num_triples,), generator=gen)
    tail = torch.randint(0, num_nodes, (num_triples,), generator=gen)
    rel = torch.randint(0, 3, (num_triples,), generator=gen)
    scores = torch.rand(num_triples, generator=gen)
    names = [f"e{i}" for i in range(num_nodes)]
    graph = EvidenceGraph(head, rel, tail, scores, names, ["r0", "r1", "r2"], [0, 1])
    items = evidence_chains(graph, max_hops=max_hops)
    assert set().union(*(item.triples for item in items)) == set(range(num_triples))
    assert all(item.text.count("->") + item.text.count("<-") <= 2 * max_hops for item in items)
    scores = graph.scores.tolist()
    for item in items:
        assert item.score == pytest.approx(sum(scores[t] for t in item.triples) / len(item.triples))
    assert items[-1].score == pytest.approx(max(item.score for item in items))
