"""Subgraph helpers: the signed steps that lead into nameless mediators."""

from __future__ import annotations

import torch
from subgraphs import make_subgraph


def test_a_step_is_a_mediator_step_where_every_triple_it_crosses_leads_to_a_nameless_node() -> None:
    # Ghost Rider (0) -starring-> performance m.1 (1) -actor-> Eva Mendes (2); the film's
    # -producer-> Avi Arad (3); a second performance m.2 (4) whose actor is nameless too (5).
    sub = make_subgraph(
        6,
        [(0, 1), (1, 2), (0, 3), (0, 4), (4, 5)],
        rels=["film.starring", "performance.actor", "film.producer", "film.starring", "performance.actor"],
    )
    named = torch.tensor([True, False, True, True, False, False])
    steps = sub.mediator_steps(named)
    signed = {name: 2 * i for i, name in enumerate(sub.relation_types)}
    # Forward over starring: both ends are performances (nameless); backward: the film, named.
    assert bool(steps[signed["film.starring"]]) and not bool(steps[signed["film.starring"] + 1])
    # Actor forward reaches Eva Mendes (named) once: not a mediator step; backward reaches the
    # performances.
    assert not bool(steps[signed["performance.actor"]]) and bool(steps[signed["performance.actor"] + 1])
    assert not bool(steps[signed["film.producer"]]) and not bool(steps[signed["film.producer"] + 1])
    assert steps.shape == (2 * len(sub.relation_types),)
