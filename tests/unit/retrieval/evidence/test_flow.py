"""PathRAG flow paths: a hand-worked 7-entity graph (resources, pruning, hops, top-k) and edge cases."""

from __future__ import annotations

import pytest
from evidence_graphs import make_graph, summary

from kgqa.retrieval.evidence import flow
from kgqa.retrieval.evidence.flow import flow_paths
from kgqa.retrieval.evidence.items import render_path

# Entities A B C D E G H (0..6). Triples (head -relation-> tail):
#   t0: A -r0-> B   t1: C -r1-> A   t2: B -r2-> D   t3: C -r3-> G   t4: G -r4-> D   t5: D -r5-> E
#   t6: B -r6-> H
# Undirected degrees: A 2 (B C), B 3 (A D H), C 2 (A G), D 3 (B G E), E 1, G 2 (C D), H 1.
# Retrieved nodes: A, D, E. alpha = .8 throughout.
NAMES = ["A", "B", "C", "D", "E", "G", "H"]
TRIPLES = [
    (0, "r0", 1, 0.5),
    (2, "r1", 0, 0.5),
    (1, "r2", 3, 0.5),
    (2, "r3", 5, 0.5),
    (5, "r4", 3, 0.5),
    (3, "r5", 4, 0.5),
    (1, "r6", 6, 0.5),
]
A, B, C, D, E, G, H = range(7)
RETRIEVED = [A, D, E]
# Resources from A (Eq. 2; layer by layer, each node set once):
#   L1: B = C = .8 * 1 / 2 = .4                       (S/deg: B .4/3 = .1333, C .4/2 = .2)
#   L2: from B .8 * .4 / 3 = .106667 to D and H; from C .8 * .4 / 2 = .16 to G
#       D = .106667 (S/deg .035556)  H = .106667  G = .16 (S/deg .08)
#   L3: G would add .8 * .16 / 2 = .064 to D, but D is already set; D passes .8 * .106667 / 3
#       = .028444 to E only when theta <= .035556.
# Resources from D: L1 B = G = E = .8 / 3 = .266667 (S/deg: B .088889, G .133333, E .266667);
#   L2: A = H = .8 * .266667 / 3 = .071111 (A: S/deg .035556), C = .8 * .266667 / 2 = .106667
#   (S/deg .053333).
# Resources from E: L1 D = .8 (S/deg .266667); L2 B = G = .8 * .8 / 3 = .213333 (S/deg: B
#   .071111, G .106667); L3 A = H = .8 * .213333 / 3 = .056889, C = .8 * .213333 / 2 = .085333.
#
# theta = .05, max_hops = 3. Nodes that pass on flow: from A every node but D; from D every
# node but A; from E every node reached before layer 3. Candidate paths, Eq. 4 (sum of node
# resources / number of edges):
#   from A: A-B-D   (1 + .4 + .106667) / 2        = .753333
#           A-C-G-D (1 + .4 + .16 + .106667) / 3  = .555556
#   from D: D-E     (1 + .266667) / 1             = 1.266667
#           D-B-A   (1 + .266667 + .071111) / 2   = .668889  (reverse of A-B-D: lower, dropped)
#           D-G-C-A (1 + .266667 + .106667 + .071111) / 3 = .481481 (reverse of A-C-G-D: dropped)
#   from E: E-D     (1 + .8) / 1                  = 1.8      (beats D-E)
#           E-D-B-A (1 + .8 + .213333 + .056889) / 3 = .690074
#   (E-D-G-C-A has 4 edges; from A nothing reaches E because D stops the flow.)
R_ACGD = (1 + 0.4 + 0.16 + 0.8 * 0.4 / 3) / 3
R_EDBA = (1 + 0.8 + 0.64 / 3 + 0.8 * 0.64 / 9) / 3
R_ABD = (1 + 0.4 + 0.8 * 0.4 / 3) / 2
R_ED = 1.8
LINE_ACGD = ("A <- r1 <- C -> r3 -> G -> r4 -> D", (1, 3, 4), pytest.approx(R_ACGD))
LINE_EDBA = ("E <- r5 <- D <- r2 <- B <- r0 <- A", (5, 2, 0), pytest.approx(R_EDBA))
LINE_ABD = ("A -> r0 -> B -> r2 -> D", (0, 2), pytest.approx(R_ABD))
LINE_ED = ("E <- r5 <- D", (5,), pytest.approx(R_ED))


def test_flow_resources_match_hand_computed_values() -> None:
    neighbours, _ = flow._undirected(make_graph(NAMES, TRIPLES))
    resource = flow._propagate(A, neighbours, alpha=0.8, max_hops=3, theta=0.05)
    expected = {A: 1.0, B: 0.4, C: 0.4, D: 0.32 / 3, H: 0.32 / 3, G: 0.16}  # E cut off: D stops
    assert resource == pytest.approx(expected)
    lower = flow._propagate(A, neighbours, alpha=0.8, max_hops=3, theta=0.02)
    assert lower == pytest.approx({**expected, E: 0.8 * (0.32 / 3) / 3})


def test_flow_paths_match_hand_computed_reliabilities_in_ascending_order() -> None:
    items = flow_paths(make_graph(NAMES, TRIPLES), RETRIEVED, theta=0.05)
    assert summary(items) == [LINE_ACGD, LINE_EDBA, LINE_ABD, LINE_ED]
    assert [item.entities for item in items] == [(A, C, G, D), (E, D, B, A), (A, B, D), (E, D)]


def test_flow_paths_theta_prunes_branches() -> None:
    # theta = .1: from A, G stops (.08), so A-C-G-D goes; from E, B stops (.071111), so E-D-B-A
    # goes; from D, B stops (.088889) and C stops (.053333), so A is not reached at all.
    items = flow_paths(make_graph(NAMES, TRIPLES), RETRIEVED, theta=0.1)
    assert summary(items) == [LINE_ABD, LINE_ED]


def test_flow_paths_default_theta_keeps_only_strong_flows() -> None:
    # theta = .3 (default): only the start passes flow on (A's B .1333 and C .2, D's B .088889,
    # G .133333 and E .266667, E's D .266667 all stop), so only 1-edge paths survive: A has no
    # retrieved neighbour, D-E (1.266667) loses to E-D (1.8).
    items = flow_paths(make_graph(NAMES, TRIPLES), RETRIEVED)
    assert summary(items) == [LINE_ED]


def test_flow_paths_max_hops_bounds_path_length() -> None:
    graph = make_graph(NAMES, TRIPLES)
    # 2 edges: A-C-G-D and E-D-B-A (3 edges) go; A-B-D (from A) still beats D-B-A.
    assert summary(flow_paths(graph, RETRIEVED, theta=0.05, max_hops=2)) == [LINE_ABD, LINE_ED]
    assert summary(flow_paths(graph, RETRIEVED, theta=0.05, max_hops=1)) == [LINE_ED]


@pytest.mark.parametrize(
    ("top_k", "expected"), [(0, []), (1, [LINE_ED]), (3, [LINE_EDBA, LINE_ABD, LINE_ED])]
)
def test_flow_paths_keep_global_top_k(top_k: int, expected: list[tuple[str, tuple[int, ...], float]]) -> None:
    assert summary(flow_paths(make_graph(NAMES, TRIPLES), RETRIEVED, theta=0.05, top_k=top_k)) == expected


def test_flow_paths_use_best_parallel_triple_and_keep_first_orientation_on_ties() -> None:
    # A -r0-> B (.3) and B -r1-> A (.7) are parallel: deg(A) = 1, the step uses t1 (backward).
    # From A: B = .8, C = .8 * .8 / 2 = .32, A-B-C = (1 + .8 + .32) / 2 = 1.06. From C the same
    # by symmetry; the tie keeps the orientation found first (start A).
    graph = make_graph(["A", "B", "C"], [(0, "r0", 1, 0.3), (1, "r1", 0, 0.7), (1, "r2", 2, 0.5)])
    assert summary(flow_paths(graph, [A, 2])) == [("A <- r1 <- B -> r2 -> C", (1, 2), pytest.approx(1.06))]


def test_flow_paths_handle_empty_inputs() -> None:
    graph = make_graph(NAMES, TRIPLES)
    assert flow_paths(graph, []) == []
    assert flow_paths(graph, [A]) == []  # no pair
    assert flow_paths(graph, [A, A]) == []  # duplicates collapse to one node
    assert flow_paths(make_graph(["A", "B"], []), [0, 1]) == []  # no triples, isolated nodes


def test_flow_paths_reject_bad_arguments() -> None:
    graph = make_graph(NAMES, TRIPLES)
    with pytest.raises(ValueError, match="alpha"):
        flow_paths(graph, RETRIEVED, alpha=0.0)
    with pytest.raises(ValueError, match="max_hops"):
        flow_paths(graph, RETRIEVED, max_hops=0)
    with pytest.raises(ValueError, match="node ids"):
        flow_paths(graph, [A, 7])


def test_render_path_reads_backward_steps_against_the_arrow() -> None:
    graph = make_graph(NAMES, TRIPLES)
    assert render_path(graph, [C, A, B], [1, 0]) == "C -> r1 -> A -> r0 -> B"
    assert render_path(graph, [B, A, C], [0, 1]) == "B <- r0 <- A <- r1 <- C"
    with pytest.raises(ValueError, match="does not join"):
        render_path(graph, [A, D], [0])


def test_flow_paths_start_always_passes_flow() -> None:
    # Two linked hubs, each with three leaves: deg 4, so S / deg = 1 / 4 < theta .3 at either
    # start, yet the start still sends .8 / 4 = .2 to each neighbour: hub1-hub2 scores
    # (1 + .2) / 1 = 1.2 (both orientations tie; the first found, from hub1, is kept).
    names = ["hub1", "hub2", "a", "b", "c", "d", "e", "f"]
    leaves = [(hub, "r", leaf, 0.5) for hub, first in ((0, 2), (1, 5)) for leaf in range(first, first + 3)]
    graph = make_graph(names, [(0, "link", 1, 0.5), *leaves])
    assert summary(flow_paths(graph, [0, 1])) == [("hub1 -> link -> hub2", (0,), pytest.approx(1.2))]
    # Past the start Eq. 3 applies: a-hub1-b needs hub1 (S .8 from a, S / deg .2) to pass flow on,
    # which it does at theta .2: b gets .8 * .8 / 4 = .16, path (1 + .8 + .16) / 2 = .98.
    assert flow_paths(graph, [2, 3]) == []
    assert summary(flow_paths(graph, [2, 3], theta=0.2)) == [
        ("a <- r <- hub1 -> r -> b", (1, 2), pytest.approx(0.98))
    ]
