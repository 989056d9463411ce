"""Triple scorer (SubgraphRAG 3.1) and its input batch.

:class:`TripleScorer` is an MLP on ``[z_q || z_h || z_r || z_t || z_tau]`` giving one logit per
triple. Its first layer is factorised: ``W [q, h, r, t, tau] = W_q q + W_h h + W_r r + W_t t +
W_tau tau``, so each distinct entity and relation is projected once per question and triples
only gather and add rows, which is far cheaper than building the [E, 4d + 2D] concatenation.

The scorer saves and loads through the checkpoint scheme of :mod:`kgqa.retrieval.models.nn`;
:class:`ScorerBatch` also feeds the extractive reader (:mod:`kgqa.reasoning.extractive`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from kgqa.retrieval.models.dde import triple_features
from kgqa.retrieval.models.nn import Checkpointable, MlpConfig, mlp_tail

# --------------------------------------------------------------------------- configs


@dataclass(frozen=True, slots=True)
class ScorerConfig(MlpConfig):
    """Shape of a :class:`TripleScorer`: SubgraphRAG's reference is hidden 1024, one hidden layer."""


# --------------------------------------------------------------------------- batch


@dataclass(frozen=True, slots=True)
class ScorerBatch:
    """One question's subgraph, or several as one disjoint graph (:meth:`concat`), ready for
    :class:`TripleScorer` and the extractive reader.

    N = local entities, E = triples, R = local relations, d = embedding width, D = DDE width,
    B = questions.

    Attributes:
        question: [d] question embedding; [B, d] for B questions.
        entity_emb: [N, d] entity text embeddings; rows where ``has_text`` is False are ignored
            (any values, e.g. zeros) and replaced by the model's shared ``no_text`` vector.
        has_text: BoolTensor [N], False for entities without a usable name/text (e.g. CVT nodes).
        relation_emb: [R, d] relation text embeddings.
        head: LongTensor [E] local head ids.
        rel: LongTensor [E] indices into ``relation_emb``.
        tail: LongTensor [E] local tail ids.
        dde: [N, D] directional distance encodings (:func:`kgqa.retrieval.models.dde.dde`).
        entity_question: LongTensor [N], the question each entity row belongs to; ``None`` for
            one question (PyG's ``batch`` vector).
        relation_question: LongTensor [R], the question each relation row belongs to; ``None``
            for one question. A triple's question is that of its relation row.
    """

    question: Tensor
    entity_emb: Tensor
    has_text: Tensor
    relation_emb: Tensor
    head: Tensor
    rel: Tensor
    tail: Tensor
    dde: Tensor
    entity_question: Tensor | None = None
    relation_question: Tensor | None = None

    def __post_init__(self) -> None:
        if self.entity_emb.dim() != 2:
            raise ValueError(f"entity_emb must be [N, d], got {list(self.entity_emb.shape)}")
        n, d = self.entity_emb.shape
        e = self.head.shape[0] if self.head.dim() == 1 else -1
        problems: list[str] = []
        batched = self.entity_question is not None
        if batched != (self.relation_question is not None):
            problems.append("entity_question and relation_question must be given together")
        if self.question.shape[-1:] != (d,) or self.question.dim() != (2 if batched else 1):
            want = f"[B, {d}] with entity_question and relation_question" if batched else f"[{d}]"
            problems.append(f"question {list(self.question.shape)} != {want}")
        if self.has_text.shape != (n,) or self.has_text.dtype != torch.bool:
            got = f"{self.has_text.dtype} {list(self.has_text.shape)}"
            problems.append(f"has_text must be BoolTensor [{n}], got {got}")
        if self.relation_emb.dim() != 2 or self.relation_emb.shape[1] != d:
            problems.append(f"relation_emb {list(self.relation_emb.shape)} != [R, {d}]")
        for name in ("head", "rel", "tail"):
            t = getattr(self, name)
            if t.shape != (e,) or t.dtype != torch.long:
                problems.append(f"{name} must be LongTensor [E], got {t.dtype} {list(t.shape)}")
        if self.dde.dim() != 2 or self.dde.shape[0] != n:
            problems.append(f"dde {list(self.dde.shape)} != [{n}, D]")
        if problems:
            raise ValueError("malformed ScorerBatch: " + "; ".join(problems))

    @property
    def num_entities(self) -> int:
        return int(self.entity_emb.shape[0])

    @property
    def num_triples(self) -> int:
        return int(self.head.shape[0])

    def to(self, device: torch.device | str) -> ScorerBatch:
        """The same batch with every tensor on ``device``."""
        tensors = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: t.to(device) for k, t in tensors.items() if t is not None})

    def per_entity(self, rows: Tensor) -> Tensor:
        """Per-question ``rows`` ([d'] for one question, [B, d'] for B) spread to every entity
        row: broadcastable to [N, d']."""
        return rows if self.entity_question is None else rows[self.entity_question]

    def per_relation(self, rows: Tensor) -> Tensor:
        """Per-question ``rows`` spread to every relation row: broadcastable to [R, d']."""
        return rows if self.relation_question is None else rows[self.relation_question]

    def question_of_triples(self) -> Tensor:
        """LongTensor [E], the question of each triple (zeros for one question)."""
        if self.relation_question is None:
            return torch.zeros_like(self.rel)
        return self.relation_question[self.rel]

    def question_of_entities(self) -> Tensor:
        """LongTensor [N], the question of each entity row (zeros for one question)."""
        if self.entity_question is None:
            return self.head.new_zeros(self.num_entities)
        return self.entity_question

    @staticmethod
    def concat(batches: Sequence[ScorerBatch]) -> ScorerBatch:
        """One-question batches as one disjoint graph (the PyG way): rows stacked, head, tail
        and rel shifted by the entities and relations before them, and the ``*_question``
        vectors saying which question each row came from.

        Why: a model then runs once for all of them, with the same arithmetic per question as
        on each alone, instead of paying each operation's fixed cost once per question. One
        batch comes back as it is (the one-question form, which every model also reads).
        """
        if any(b.entity_question is not None for b in batches):
            raise ValueError("ScorerBatch.concat takes one-question batches")
        if not batches:
            raise ValueError("ScorerBatch.concat needs at least one batch")
        if len(batches) == 1:
            return batches[0]
        device = batches[0].head.device
        entities = torch.tensor([b.num_entities for b in batches], device=device)
        relations = torch.tensor([b.relation_emb.shape[0] for b in batches], device=device)
        triples = torch.tensor([b.num_triples for b in batches], device=device)
        entity_start = torch.cumsum(entities, 0) - entities
        relation_start = torch.cumsum(relations, 0) - relations
        which = torch.arange(len(batches), device=device)
        return ScorerBatch(
            question=torch.stack([b.question for b in batches]),
            entity_emb=torch.cat([b.entity_emb for b in batches]),
            has_text=torch.cat([b.has_text for b in batches]),
            relation_emb=torch.cat([b.relation_emb for b in batches]),
            head=torch.cat([b.head for b in batches]) + entity_start.repeat_interleave(triples),
            rel=torch.cat([b.rel for b in batches]) + relation_start.repeat_interleave(triples),
            tail=torch.cat([b.tail for b in batches]) + entity_start.repeat_interleave(triples),
            dde=torch.cat([b.dde for b in batches]),
            entity_question=which.repeat_interleave(entities),
            relation_question=which.repeat_interleave(relations),
        )


# --------------------------------------------------------------------------- shared pieces


def _distinct(ids: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """(the distinct ids ascending, each element's index among them): ``torch.unique`` with
    ``return_inverse``, by a presence mask over the N local ids instead of a sort."""
    present = torch.zeros(num_nodes, dtype=torch.bool, device=ids.device)
    present[ids] = True
    distinct = present.nonzero().squeeze(1)
    position = torch.empty(num_nodes, dtype=torch.long, device=ids.device)
    position[distinct] = torch.arange(distinct.numel(), device=ids.device)
    return distinct, position[ids]


def _project(batch: ScorerBatch, no_text: Tensor, entities: Tensor, w_x: Tensor, w_dde: Tensor) -> Tensor:
    """``W_x x_e + W_dde s_e`` for the given entities only: [len(entities), hidden]
    (:func:`projected_inputs`)."""
    return projected_inputs(
        batch.entity_emb[entities], batch.has_text[entities], batch.dde[entities] @ w_dde.T, no_text, w_x
    )


def projected_inputs(
    entity_emb: Tensor, has_text: Tensor, rest: Tensor, no_text: Tensor, w_x: Tensor
) -> Tensor:
    """``W_x x_e + rest_e`` per entity row, ``x_e`` the shared ``no_text`` [d] where ``has_text``
    [n] is False (``entity_emb`` [n, d], ``rest`` [n, h], ``w_x`` [h, d]): [n, h].

    The same as projecting :func:`entity_inputs`, but the text embeddings, which need no
    gradient, never enter the backward pass, and rows without text are projected as they come
    and then overwritten with the projection of ``no_text`` (cheaper than substituting the
    [n, d] inputs first). Finding those rows reads their count on the host, once per batch: a
    mask over every row (``torch.where``) cost a third more per training step on the CPU,
    where kgqa trains most (docs/decisions.md, issue 31).
    """
    out = torch.addmm(rest, entity_emb, w_x.T)
    missing = (~has_text).nonzero().squeeze(1)
    if missing.numel():
        out[missing] = rest[missing] + no_text @ w_x.T
    return out


def entity_inputs(batch: ScorerBatch, no_text: Tensor) -> Tensor:
    """[N, d] entity embeddings with every no-text row replaced by the shared ``no_text`` vector."""
    return torch.where(batch.has_text[:, None], batch.entity_emb, no_text.expand_as(batch.entity_emb))


# --------------------------------------------------------------------------- triple scorer


class TripleScorer(Checkpointable):
    """MLP on ``[z_q || z_h || z_r || z_t || z_tau]`` -> one logit per triple (SubgraphRAG 3.1).

    ``z_tau = [dde_head || dde_tail]``. Entities without text share the learned vector
    ``no_text`` [d]. Train with BCE-with-logits on the weak labels; ``sigmoid`` gives the score.
    """

    KIND = "triple_scorer"
    CONFIG = ScorerConfig

    def __init__(self, config: ScorerConfig) -> None:
        super().__init__(config)
        d, dd = config.emb_dim, config.dde_dim
        self.in_dim = 4 * d + 2 * dd
        # Same scale as an L2-normalised text embedding.
        self.no_text = nn.Parameter(torch.randn(d) * d**-0.5)
        self.first = nn.Linear(self.in_dim, config.hidden)
        self.mlp = mlp_tail(config.hidden, layers=config.layers, dropout=config.dropout)

    def _first_layer_blocks(self) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
        """Split ``first.weight`` [hidden, 4d + 2D] into W_q, W_h, W_r, W_t, W_tau_head, W_tau_tail."""
        d, dd = self.config.emb_dim, self.config.dde_dim
        w_q, w_h, w_r, w_t, w_th, w_tt = self.first.weight.split([d, d, d, d, dd, dd], dim=1)
        return w_q, w_h, w_r, w_t, w_th, w_tt

    def forward(self, batch: ScorerBatch) -> Tensor:
        """Logits [E] via the factorised first layer.

        Computes ``W_h x_e + W_tau_h s_e`` once per entity that heads some triple and
        ``W_t x_e + W_tau_t s_e`` once per entity that tails one (in a tree-like subgraph most
        entities take only one role, so projecting both roles for every entity would double the
        main cost), ``W_r x_r + W_q q + b`` once per relation, then per triple only gathers and
        adds: O((H + T) d h + R d h + E h) instead of O(E d h) for ``forward_concat``
        (timings: docs/decisions.md).
        """
        w_q, w_h, w_r, w_t, w_th, w_tt = self._first_layer_blocks()
        heads, head_of = _distinct(batch.head, batch.num_entities)
        tails, tail_of = _distinct(batch.tail, batch.num_entities)
        q = batch.question @ w_q.T + self.first.bias  # [hidden], or [B, hidden]
        # One table of projections: heads [H], then tails [T], then relations with their
        # question's q folded in [R].
        table = torch.cat(
            [
                _project(batch, self.no_text, heads, w_h, w_th),
                _project(batch, self.no_text, tails, w_t, w_tt),
                batch.relation_emb @ w_r.T + batch.per_relation(q),
            ]
        )
        rows = torch.stack(
            [head_of, tail_of + heads.numel(), batch.rel + heads.numel() + tails.numel()], dim=1
        )
        # Per triple, the sum of its three rows in one fused pass (no [E, hidden] temporaries).
        offsets = torch.arange(0, rows.numel(), 3, device=rows.device)
        h1 = F.embedding_bag(rows.flatten(), table, offsets, mode="sum")
        return self.mlp(h1).squeeze(-1)

    def forward_concat(self, batch: ScorerBatch) -> Tensor:
        """Logits [E] from the explicit per-triple concatenation [E, 4d + 2D] (reference form)."""
        x = entity_inputs(batch, self.no_text)
        z = torch.cat(
            [
                batch.question.reshape(-1, batch.question.shape[-1])[batch.question_of_triples()],
                x[batch.head],
                batch.relation_emb[batch.rel],
                x[batch.tail],
                triple_features(batch.dde, torch.stack([batch.head, batch.tail])),
            ],
            dim=1,
        )
        return self.mlp(self.first(z)).squeeze(-1)
