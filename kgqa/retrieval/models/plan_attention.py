"""The word-order planner: each step of a relation path attends to the question's tokens.

:class:`~kgqa.retrieval.models.plans.PlanScorer` reads sentence embeddings of the question, which keep
little word order; PathQuestion nests relations in varied orders ("the place of birth of X 's
other half 's father"), and which relation comes first is exactly what a plan must get right.
:class:`AttentionPlanScorer` reads the encoder's token states in order instead: step ``i`` of a
plan, a (signed relation, position) pair, queries the tokens, and the text it attends to is
matched against the relation. The encoder stays frozen (its token states are computed once per
question, :meth:`~kgqa.embed.transformer.TransformerEmbedder.embed_tokens`); the head is small,
so it trains on a CPU in minutes.

Like the MLP planner the score is factorised: a plan's logit is the sum of its steps' scores
plus a length term, and a step's score depends only on (position, signed relation), so a
question with hundreds of plans costs ``max_steps * 2R`` attention queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor, nn

from kgqa.errors import ConfigError
from kgqa.retrieval.features import PreparedQuestion
from kgqa.retrieval.models.nn import Checkpointable, MlpConfig


@dataclass(frozen=True, slots=True)
class AttentionPlannerConfig(MlpConfig):
    """Shape of an :class:`AttentionPlanScorer`: ``hidden`` is the attention width, ``layers`` the
    hidden layers of the step-match MLP, ``max_steps`` the longest plan it can read."""

    dde_dim: int = 0
    hidden: int = 128
    layers: int = 1
    max_steps: int = 3

    def __post_init__(self) -> None:
        MlpConfig.__post_init__(self)
        if self.max_steps < 1:
            raise ConfigError(f"AttentionPlannerConfig: max_steps must be >= 1, got {self.max_steps}")


class AttentionPlanScorer(Checkpointable):
    """Logit per plan = ``sum_i step(i, s_i) + length(question, len)``.

    ``step(i, s)``: a query from the relation's text embedding, the step position ``i`` and the
    direction attends over the question's token states; an MLP scores the attended text, the
    projected relation and their product. ``length``: a linear map of the mean token state to
    one logit per plan length (how many hops the question asks for).
    """

    KIND: ClassVar[str] = "attention_plan_scorer"
    CONFIG: ClassVar[type[AttentionPlannerConfig]] = AttentionPlannerConfig

    def __init__(self, config: AttentionPlannerConfig) -> None:
        super().__init__(config)
        d, h = config.emb_dim, config.hidden
        self.token_norm = nn.LayerNorm(d)
        self.key = nn.Linear(d, h)
        self.value = nn.Linear(d, h)
        self.relation_query = nn.Linear(d, h)
        self.relation_value = nn.Linear(d, h)
        self.position = nn.Embedding(config.max_steps, h)
        self.direction = nn.Embedding(2, h)
        layers: list[nn.Module] = [nn.Linear(3 * h, h), nn.ReLU()]
        for _ in range(config.layers - 1):
            layers += [nn.Linear(h, h), nn.ReLU()]
        if config.dropout:
            layers.append(nn.Dropout(config.dropout))
        self.match = nn.Sequential(*layers, nn.Linear(h, 1))
        self.length = nn.Linear(d, config.max_steps)

    def step_scores(self, tokens: Tensor, relation_emb: Tensor) -> Tensor:
        """[L, 2R]: the score of signed relation ``s`` (``2 * rel + backward``) at step ``i``.

        Args:
            tokens: [T, d] the question's token states, in order.
            relation_emb: [R, d] text embeddings of the subgraph's local relations.
        """
        h, steps = self.config.hidden, self.config.max_steps
        x = self.token_norm(tokens)
        keys, values = self.key(x), self.value(x)  # [T, h]
        rel_q = self.relation_query(relation_emb)  # [R, h]
        signed = (rel_q.unsqueeze(1) + self.direction.weight.unsqueeze(0)).flatten(0, 1)  # [2R, h]
        queries = signed.unsqueeze(0) + self.position.weight.unsqueeze(1)  # [L, 2R, h]
        attention = torch.softmax(queries @ keys.T / math.sqrt(h), dim=-1)  # [L, 2R, T]
        read = attention @ values  # [L, 2R, h]
        rel_v = self.relation_value(relation_emb).repeat_interleave(2, dim=0).expand(steps, -1, -1)
        return self.match(torch.cat([read, rel_v, read * rel_v], dim=-1)).squeeze(-1)

    def forward(self, tokens: Tensor, relation_emb: Tensor, steps: Tensor) -> Tensor:
        """Logits [P] for plans ``steps`` (LongTensor [P, L] as in
        :class:`~kgqa.retrieval.models.plans.Plans`, L <= ``max_steps``)."""
        table = self.step_scores(tokens, relation_emb)  # [max_steps, 2R]
        present = steps >= 0
        position = torch.arange(steps.shape[1], device=steps.device).expand_as(steps)
        per_step = table[position, steps.clamp(min=0)] * present
        lengths = present.sum(dim=1).clamp(min=1) - 1
        return per_step.sum(dim=1) + self.length(tokens.mean(dim=0))[lengths]

    def plan_logits(self, prepared: PreparedQuestion, relation_emb: Tensor, steps: Tensor) -> Tensor:
        """Logits [P] for ``prepared``'s plans, from its token states.

        Raises:
            ConfigError: ``prepared`` was built without token states.
        """
        if prepared.question_tokens is None:
            raise ConfigError(
                "the word-order planner needs the question's token states",
                hint="prepare the question with an embedder that has embed_tokens (the transformer embedder)",
            )
        return self(prepared.question_tokens, relation_emb, steps)
