"""The word-order planner: factorised plan scores, word order, checkpoints and planner dispatch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from test_plans import WRITER

from kgqa.errors import CheckpointError, ConfigError
from kgqa.retrieval.features import PreparedQuestion
from kgqa.retrieval.models.plan_attention import AttentionPlannerConfig, AttentionPlanScorer
from kgqa.retrieval.models.plans import PlannerConfig, PlanScorer, planner_from_checkpoint, rank_plans


def _model(seed: int = 0, **config: int) -> AttentionPlanScorer:
    torch.manual_seed(seed)
    return AttentionPlanScorer(AttentionPlannerConfig(**{"emb_dim": 6, "hidden": 8, **config})).eval()


def test_a_plan_scores_the_sum_of_its_steps_plus_its_length_term() -> None:
    model = _model()
    tokens, relations = torch.randn(5, 6), torch.randn(3, 6)
    steps = torch.tensor([[0, 3, 4], [5, -1, -1], [2, 1, -1]])
    table = model.step_scores(tokens, relations)
    length = model.length(tokens.mean(dim=0))
    expected = torch.stack(
        [
            table[0, 0] + table[1, 3] + table[2, 4] + length[2],
            table[0, 5] + length[0],
            table[0, 2] + table[1, 1] + length[1],
        ]
    )
    with torch.inference_mode():
        torch.testing.assert_close(model(tokens, relations, steps), expected)
        # Padding to max_steps or not gives the same scores.
        torch.testing.assert_close(model(tokens, relations, steps[1:, :2]), expected[1:])


def test_the_word_order_planner_reads_token_order_and_step_order() -> None:
    model = _model(seed=3)
    tokens, relations = torch.randn(6, 6), torch.randn(2, 6)
    steps = torch.tensor([[0, 2], [2, 0], [1, 2]])
    with torch.inference_mode():
        logits = model(tokens, relations, steps)
        reversed_tokens = model(tokens.flip(0) + 0.5 * torch.randn(6, 6), relations, steps)
    # The same two relations in the other order, or one step reversed, score differently.
    assert not torch.isclose(logits[0], logits[1])
    assert not torch.isclose(logits[0], logits[2])
    assert not torch.allclose(logits, reversed_tokens)


def test_it_learns_which_relation_comes_first_from_the_token_order() -> None:
    """Two questions with the same words in swapped order ask for swapped plans; a sentence
    embedding (a mean of the tokens) cannot tell them apart, the word-order planner can."""
    torch.manual_seed(0)
    words = torch.randn(2, 6)
    position = torch.randn(4, 6)
    first = torch.stack([words[0], words[1], words[0] * 0, words[1] * 0]) + position
    second = torch.stack([words[1], words[0], words[0] * 0, words[1] * 0]) + position
    relations = words.clone()
    steps = torch.tensor([[0, 2], [2, 0]])  # rel 0 then rel 1, rel 1 then rel 0
    model = _model(seed=1)
    model.train()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(200):
        for tokens, gold in ((first, 0), (second, 1)):
            loss = torch.nn.functional.cross_entropy(
                model(tokens, relations, steps)[None], torch.tensor([gold])
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    with torch.inference_mode():
        assert int(torch.argmax(model(first, relations, steps))) == 0
        assert int(torch.argmax(model(second, relations, steps))) == 1


def test_checkpoints_load_as_the_planner_kind_they_hold() -> None:
    model = _model()
    mlp = PlanScorer(PlannerConfig(emb_dim=6, hidden=8))
    tokens, relations, steps = torch.randn(4, 6), torch.randn(2, 6), torch.tensor([[0, 3], [1, -1]])
    again = planner_from_checkpoint(model.checkpoint(embedder_model_id="m"), embedder_model_id="m")
    assert isinstance(again, AttentionPlanScorer)
    with torch.inference_mode():
        assert torch.equal(again(tokens, relations, steps), model(tokens, relations, steps))
    assert isinstance(
        planner_from_checkpoint(mlp.checkpoint(embedder_model_id="m"), embedder_model_id="m"), PlanScorer
    )
    with pytest.raises(CheckpointError, match="planner is a 'triple_scorer'"):
        planner_from_checkpoint({"kind": "triple_scorer"}, embedder_model_id="m")
    with pytest.raises(ConfigError, match="max_steps"):
        AttentionPlannerConfig(emb_dim=6, max_steps=0)


def test_rank_plans_runs_the_word_order_planner_on_the_token_states() -> None:
    model = _model(max_steps=2)
    tables = (
        SimpleNamespace(has_text=torch.ones(5, dtype=torch.bool)),
        SimpleNamespace(matrix=torch.randn(2, 6)),
    )
    views = torch.randn(3, 6)

    def prepared(tokens: torch.Tensor | None) -> PreparedQuestion:
        return PreparedQuestion(
            views, WRITER, torch.arange(5), torch.arange(2), torch.zeros(5, 1), 2, question_tokens=tokens
        )

    with torch.inference_mode():
        ranked = rank_plans(model, prepared(torch.randn(7, 6)), tables)  # type: ignore[arg-type]
    assert ranked.plans.num_plans == 3
    assert torch.isclose(ranked.probabilities.sum(), torch.tensor(1.0))
    with pytest.raises(ConfigError, match="token states"):
        rank_plans(model, prepared(None), tables)  # type: ignore[arg-type]
