"""The second scoring pass: reach columns appended to the DDE, probabilities refined."""

from __future__ import annotations

import torch

from kgqa.retrieval.features import PreparedQuestion
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.models.path_context import PATH_CONTEXT_DIM, reach_columns, with_path_context


def _prepared() -> PreparedQuestion:
    # Topic 0; triples 0 -> 1, 1 -> 2, 3 -> 2 (entity 3 only reachable through 2).
    sub = Subgraph(
        entity_ids=["a", "b", "c", "d"],
        relation_types=["R"],
        head=torch.tensor([0, 1, 3]),
        rel=torch.tensor([0, 0, 0]),
        tail=torch.tensor([1, 2, 2]),
        rel_eids=["0", "1", "2"],
        num_topics=1,
    )
    dde = torch.arange(40, dtype=torch.float32).reshape(4, 10)
    return PreparedQuestion(torch.zeros(1, 3), sub, torch.arange(4), torch.arange(1), dde, hops=2)


def test_with_path_context_appends_the_first_pass_reach_to_the_dde() -> None:
    prepared = _prepared()
    probabilities = torch.tensor([0.5, 0.4, 0.25])
    extended = with_path_context(prepared, probabilities)
    assert extended.dde.shape == (4, 10 + PATH_CONTEXT_DIM)
    torch.testing.assert_close(extended.dde[:, :10], prepared.dde)
    # reach: 1 at the topic, 0.5, 0.5 * 0.4 = 0.2, then 0.2 * 0.25 = 0.05 back along 3 -> 2.
    torch.testing.assert_close(extended.dde[:, 10], torch.tensor([1.0, 0.5, 0.2, 0.05]))
    sub = prepared.subgraph
    expected = reach_columns(probabilities, sub.head, sub.tail, sub.topic, 4)
    torch.testing.assert_close(extended.dde[:, 10:], expected)
    assert extended.subgraph is prepared.subgraph and prepared.dde.shape == (4, 10)
