"""Relation-path plans (RoG's planning step, MoR's planning graph): which sequence of relations
the question asks to follow from its topic.

The triple scorers rate one triple at a time, so "who directed the films written by X" and "who
are X's co-writers" both light up WRITTEN_BY triples two hops out, and the reader then picks
right-distance entities reached through the wrong relation (docs/decisions.md). A plan is a
whole signed relation sequence (``WRITTEN_BY`` backwards, then ``DIRECTED_BY`` forwards);
:func:`enumerate_plans` lists every plan the subgraph can walk from the topics, and
:class:`PlanScorer` rates each against the question, which is a choice among a few hundred
sequences instead of thousands of triples. :func:`plan_reach` turns the plan probabilities into
two columns per entity for the reader: the best plan ending there, and the plan mass ending there.

Walks follow the subgraph's walk rule (``Subgraph.topic_walks``, decided from the training
split): never back through a topic, or through and ending at one where the data asks for it.

The MLP planner (:class:`PlanScorer`, the fast one) reads the question three ways
(:func:`question_views`): whole, and the text before and after the topic mention, and it reads
the relation mentions cut from that text in walk order (:func:`walk_mentions`), one per plan
step. A sentence embedding keeps little word order, and the order is what separates "who acted
in the films written by X" from "who wrote the films X acted in", or "the mom of kid of X"
from "the kid of mom of X"; the word-order planner
(:class:`~kgqa.retrieval.models.plan_attention.AttentionPlanScorer`) reads the question's token states
in order instead. ``kgqa train`` keeps the one with the better validation plan accuracy.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import torch
from scipy.sparse import csr_matrix
from torch import Tensor, nn

from kgqa.device import model_device
from kgqa.errors import CheckpointError, ConfigError
from kgqa.names import relationship_type
from kgqa.retrieval.features import PreparedQuestion
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.answer_type import answer_kind_fit, answer_type_fit, tail_kind_fit
from kgqa.retrieval.models.name_match import SHARPNESS, NameMatchPlanner, find_mention
from kgqa.retrieval.models.nn import Checkpointable, MlpConfig, mlp_tail, scatter_max
from kgqa.retrieval.models.plan_attention import AttentionPlanScorer

#: Plans enumerated per length at most: bounds the work on relation-rich subgraphs (Freebase).
MAX_PLANS_PER_LENGTH = 2000
#: The likeliest plans whose walks :func:`plan_guided_scores` lifts.
GUIDING_PLANS = 5
#: Sentence views the planner reads per question: the question, the text before and after the topic.
SENTENCE_VIEWS = 3
#: Relation mentions in walk order the planner reads per question (:func:`walk_mentions`).
STEP_MENTIONS = 3
#: Texts the planner reads per question (:func:`question_views`): sentence views, then mentions.
QUESTION_VIEWS = SENTENCE_VIEWS + STEP_MENTIONS
#: What separates nested relation mentions: before the topic "the c of d of X", after it "X 's a 's b".
_OF = re.compile(r"\bof\b", flags=re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?:'|\u2019)s\b", flags=re.IGNORECASE)
#: Columns of :func:`plan_reach`.
PLAN_FEATURES = ("best_plan", "plan_mass")


def question_views(question: str, mentions: Sequence[str]) -> list[str]:
    """The :data:`QUESTION_VIEWS` texts the planner embeds: the question, the text before the first
    mention of a topic found in it, the text after (``"."`` where a side is empty; the whole
    question for both when no mention is found), then :func:`walk_mentions` of the two sides
    (all ``"."`` without a mention). The mention is found regardless of case: a question typed
    in lower case still splits at its topic's name."""
    found = find_mention(question, mentions)
    if found is None:
        return [question, question, question, *["."] * STEP_MENTIONS]
    before, after = question[: found.start()].strip(), question[found.end() :].strip()
    return [question, before or ".", after or ".", *walk_mentions(before, after)]


def walk_mentions(before: str, after: str) -> list[str]:
    """The :data:`STEP_MENTIONS` pieces of the text around a topic in the order a walk from the
    topic reads them, ``"."`` past the last.

    English nests relations as possessives after the topic, read left to right ("X 's a 's b":
    a, then b), and as "of" phrases before it, read from the topic outwards ("the c of d of X":
    d, then c); the possessives bind first ("the c of X 's a": a, then c). So the pieces are the
    text after the topic cut at each "'s", then the text before it cut at each "of", nearest
    first. Each plan step's relation is matched with the piece at its position; on a question
    that is no nested possessive ("which movies did the director of X direct") the pieces are
    whatever the cut gives, and the planner learns how far to trust them.
    """
    pieces = [p.strip(" ?.!,") for p in _POSSESSIVE.split(after)]
    pieces += [p.strip(" ?.!,") for p in reversed(_OF.split(before))]
    found = [p for p in pieces if p][:STEP_MENTIONS]
    return found + ["."] * (STEP_MENTIONS - len(found))


@dataclass(frozen=True, slots=True)
class Plans:
    """The signed relation paths one subgraph can walk from its topics.

    Attributes:
        steps: LongTensor [P, L]; step ``i`` of plan ``p`` is ``2 * rel + backward`` (``rel`` a
            local relation id, ``backward`` 1 when the walk crosses the triple tail -> head), -1
            past the plan's end. Plans are ordered by length.
        end_plan: LongTensor [M] and ``end_entity``: LongTensor [M], the pairs (plan, entity where
            one of its walks ends).
    """

    steps: Tensor
    end_plan: Tensor
    end_entity: Tensor

    @property
    def num_plans(self) -> int:
        return int(self.steps.shape[0])

    def lengths(self) -> Tensor:
        """LongTensor [P]: steps per plan."""
        return (self.steps >= 0).sum(dim=1)

    def signed_steps(self, plan: int) -> list[int]:
        """Plan ``plan``'s signed steps, without the padding past its end."""
        return [s for s in self.steps[plan].tolist() if s >= 0]


def _step_matrix(sub: Subgraph) -> csr_matrix:
    """[N, 2R * N] with a 1 at (u, s * N + v) when signed step ``s`` crosses a triple from u to v."""
    n, r = sub.num_entities, len(sub.relation_types)
    head, rel, tail = sub.head.numpy(), sub.rel.numpy(), sub.tail.numpy()
    rows = np.concatenate([head, tail])
    cols = np.concatenate([(2 * rel) * n + tail, (2 * rel + 1) * n + head])
    return csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, cols)), shape=(n, 2 * r * n))


def enumerate_plans(sub: Subgraph, max_steps: int) -> Plans:
    """Every signed relation path of 1..``max_steps`` steps with a walk from a topic in ``sub``
    (walks under ``sub``'s walk rule: back through a topic only with ``sub.topic_walks``, or
    under ``sub.topic_walks_if_needed`` for the plans that reach nothing otherwise).
    """
    plans = _walked_plans(sub, max_steps)
    back = sub.walking_back()
    return plans if back is None else _with_walks_back(plans, _walked_plans(back, max_steps))


def _with_walks_back(plans: Plans, back: Plans) -> Plans:
    """``plans`` and the plans of ``back`` (walked under the permissive rule) that ``plans``
    lacks, with their ends there: the plans that reach something only through a topic. Ordered by
    length as both are.

    Of those, a plan that walks straight back over the relation it just crossed ("release year,
    then back": X -> 1970 -> X) is left out: such a walk comes home from every topic whatever
    the graph holds, so it says nothing ("the wife of X 's husband" comes home over facts).
    """
    known = {tuple(row) for row in plans.steps.tolist()}
    steps = back.steps
    walks_back = ((steps[:, 1:] == (steps[:, :-1] ^ 1)) & (steps[:, 1:] >= 0)).any(dim=1)
    extra = torch.tensor([tuple(row) not in known for row in steps.tolist()], dtype=torch.bool) & ~walks_back
    index = torch.full((back.num_plans,), -1, dtype=torch.long)
    index[extra] = plans.num_plans + torch.arange(int(extra.sum()))
    kept = extra[back.end_plan]
    merged = Plans(
        torch.cat([plans.steps, back.steps[extra]]),
        torch.cat([plans.end_plan, index[back.end_plan[kept]]]),
        torch.cat([plans.end_entity, back.end_entity[kept]]),
    )
    order = torch.sort(merged.lengths(), stable=True).indices
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel())
    return Plans(merged.steps[order], position[merged.end_plan], merged.end_entity)


def _walked_plans(sub: Subgraph, max_steps: int) -> Plans:
    """The plans of :func:`enumerate_plans` under ``sub.topic_walks`` alone.

    One sparse product per length: the frontiers of all plans of length ``k`` ([P_k, N]) times
    the step matrix give, for each plan and signed relation, the entities one step further.
    """
    n = sub.num_entities
    steps_matrix = _step_matrix(sub)
    may_end = sub.candidate_mask().numpy()
    frontier = _rows_to_entities(np.zeros(sub.num_topics, dtype=np.int64), np.arange(sub.num_topics), 1, n)
    prefixes: list[list[int]] = [[]]
    all_steps: list[list[int]] = []
    end_plan: list[np.ndarray] = []
    end_entity: list[np.ndarray] = []
    for _ in range(max_steps):
        reached = (frontier @ steps_matrix).tocoo()
        step, entity = np.divmod(reached.col, n)
        keep = may_end[entity]
        prefix, step, entity = reached.row[keep], step[keep], entity[keep]
        pairs, new_of = np.unique(prefix * (2 * len(sub.relation_types)) + step, return_inverse=True)
        if pairs.size == 0:
            break
        pairs, chosen = pairs[:MAX_PLANS_PER_LENGTH], new_of < MAX_PLANS_PER_LENGTH
        new_of, entity = new_of[chosen], entity[chosen]
        parent, signed = np.divmod(pairs, 2 * len(sub.relation_types))
        prefixes = [prefixes[p] + [int(s)] for p, s in zip(parent.tolist(), signed.tolist(), strict=True)]
        frontier = _rows_to_entities(new_of, entity, len(prefixes), n)
        ends = frontier.tocoo()  # each (plan, entity) once, however many walks lead there
        end_plan.append(ends.row + len(all_steps))
        end_entity.append(ends.col)
        all_steps += prefixes
    padded = torch.full((len(all_steps), max_steps), -1, dtype=torch.long)
    for i, plan in enumerate(all_steps):
        padded[i, : len(plan)] = torch.tensor(plan)
    return Plans(padded, _long(end_plan), _long(end_entity))


def _rows_to_entities(rows: np.ndarray, entities: np.ndarray, num_rows: int, n: int) -> csr_matrix:
    """[num_rows, N] 0/1 matrix with a 1 at each (row, entity) pair."""
    matrix = csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, entities)), shape=(num_rows, n))
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    return matrix


def _long(parts: list[np.ndarray]) -> Tensor:
    return torch.from_numpy(np.concatenate(parts)).long() if parts else torch.empty(0, dtype=torch.long)


def gold_plans(
    plans: Plans, sub: Subgraph, answers: Tensor, relation_paths: Collection[Sequence[str]] = ()
) -> Tensor:
    """BoolTensor [P]: the plans to learn for one question.

    With gold relation paths (MetaQA qtypes, PathQuestion/WC2014 paths), the plans that follow
    one of them in any direction and end at an answer, and every plan whose walks end at exactly
    the same entities as one of those (:func:`same_ends`): where the KB holds a relation both ways
    (PathQuestion's ``CHILDREN`` and ``PARENTS``), ``CHILDREN GENDER`` and ``<-PARENTS GENDER``
    answer "the sex of X 's offspring" alike, and a softmax against the named one alone would
    push the other down as wrong. Without named paths, or when none of those ends at an answer
    here, the shortest plans that end at an answer (RoG's plans from shortest paths).

    Args:
        answers: BoolTensor [N], the answer entities.
        relation_paths: relation names as in the triple file (mapped with ``relationship_type``).
    """
    ends_at_answer = torch.zeros(plans.num_plans, dtype=torch.bool)
    ends_at_answer[plans.end_plan[answers[plans.end_entity]]] = True
    relation_of = {name: i for i, name in enumerate(sub.relation_types)}
    wanted = {tuple(relation_of.get(relationship_type(name), -1) for name in path) for path in relation_paths}
    unsigned = [tuple(s // 2 for s in row if s >= 0) for row in plans.steps.tolist()]
    follows = torch.tensor([u in wanted for u in unsigned], dtype=torch.bool)
    gold = follows & ends_at_answer
    if gold.any():
        return same_ends(plans, gold, sub.num_entities)
    if not ends_at_answer.any():
        return gold
    lengths = plans.lengths()
    return ends_at_answer & (lengths == lengths[ends_at_answer].min())


def same_ends(plans: Plans, chosen: Tensor, num_nodes: int) -> Tensor:
    """BoolTensor [P]: the plans whose set of walk ends equals that of a plan ``chosen`` marks
    (the chosen ones included).

    Two end sets are equal when their overlap is as large as each of them: one sparse product of
    the [P, N] end matrix with the chosen rows.
    """
    rows, cols = plans.end_plan.numpy(), plans.end_entity.numpy()
    ends = csr_matrix(
        (np.ones(rows.size, dtype=np.float32), (rows, cols)), shape=(plans.num_plans, num_nodes)
    )
    picked = np.flatnonzero(chosen.numpy())
    overlap = (ends @ ends[picked].T).toarray()  # [P, G]
    sizes = np.bincount(rows, minlength=plans.num_plans)
    same = (overlap == sizes[:, None]) & (overlap == sizes[picked][None, :])
    return torch.from_numpy(same.any(axis=1))


def plan_reach(probabilities: Tensor, plans: Plans, num_nodes: int) -> Tensor:
    """[N, 2] with columns :data:`PLAN_FEATURES`: the probability of the best plan that ends at
    each entity, and the summed probability of all plans that do (zeros where none ends)."""
    ends = probabilities[plans.end_plan]
    best = scatter_max(ends, plans.end_entity, num_nodes)
    mass = probabilities.new_zeros(num_nodes).index_add_(0, plans.end_entity, ends).clamp(max=1.0)
    return torch.stack([best, mass], dim=1)


def plan_walk_triples(sub: Subgraph, steps: Sequence[int]) -> Tensor:
    """BoolTensor [E]: the triples on some walk of the signed plan ``steps`` from a topic.

    Step ``i`` of a walk crosses a triple of its relation in its direction, from an entity the
    first ``i`` steps reach to one from which the remaining steps still go on; walks come back
    to a topic only under ``sub.topic_walks``, or under ``sub.topic_walks_if_needed`` where the
    plan has no other walk (as in :func:`enumerate_plans`).
    """
    on_walk = _walk_triples(sub, steps)
    back = sub.walking_back()
    return _walk_triples(back, steps) if back is not None and not bool(on_walk.any()) else on_walk


def plan_ends_from(sub: Subgraph, steps: Sequence[int], start: int) -> Tensor:
    """BoolTensor [N]: where the walks of the signed plan ``steps`` from the one local entity
    ``start`` end (under ``sub.topic_walks`` alone, as :func:`_walk_triples` walks)."""
    origin = torch.zeros(sub.num_entities, dtype=torch.bool)
    origin[start] = True
    *_, ends = _frontiers(sub, [_crossing(sub, s) for s in steps], origin, sub.candidate_mask())
    return ends


def _walk_triples(sub: Subgraph, steps: Sequence[int]) -> Tensor:
    """:func:`plan_walk_triples` under ``sub.topic_walks`` alone."""
    n = sub.num_entities
    topic = torch.arange(n) < sub.num_topics
    may_end = sub.candidate_mask()
    crossings = [_crossing(sub, s) for s in steps]  # (triple mask, from end, to end) per step
    # reached[i]: where the first i steps can end
    reached = list(itertools.islice(_frontiers(sub, crossings, topic, may_end), len(crossings)))
    onward = [may_end]  # onward[i]: where step i may end
    for mask, src, dst in reversed(crossings[1:]):
        onward.insert(0, _step_ends(mask & onward[0][dst], src, n) & may_end)
    on_walk = torch.zeros(sub.num_triples, dtype=torch.bool)
    for (mask, src, dst), near, far in zip(crossings, reached, onward, strict=True):
        on_walk |= mask & near[src] & far[dst]
    return on_walk


def _frontiers(
    sub: Subgraph, crossings: Sequence[tuple[Tensor, Tensor, Tensor]], start: Tensor, may_end: Tensor
) -> Iterator[Tensor]:
    """BoolTensors [N], lazily: where walks from ``start`` stand before the first of
    ``crossings`` (:func:`_crossing`), then after each (only where ``may_end``)."""
    reached = start
    yield reached
    for mask, src, dst in crossings:
        reached = _step_ends(mask & reached[src], dst, sub.num_entities) & may_end
        yield reached


def _crossing(sub: Subgraph, signed: int) -> tuple[Tensor, Tensor, Tensor]:
    rel, backward = divmod(signed, 2)
    return (sub.rel == rel, sub.tail, sub.head) if backward else (sub.rel == rel, sub.head, sub.tail)


def _step_ends(crossed: Tensor, ends: Tensor, n: int) -> Tensor:
    out = torch.zeros(n, dtype=torch.bool)
    out[ends[crossed]] = True
    return out


@dataclass(frozen=True, slots=True)
class PlannerConfig(MlpConfig):
    """Shape of a :class:`PlanScorer`; ``max_steps`` is the longest plan it can read.

    ``step_mentions``: how many plan steps are matched with the walk-order mention at their
    position (at most :data:`STEP_MENTIONS` and ``max_steps``); 0 in checkpoints written before
    the planner read them, which load and score as they were trained.

    ``name_match``: each step also reads the cosines of its relation's name with the sentence
    views and with its walk-order mention (:func:`name_match_features`); False in checkpoints
    written before, which load and score as they were trained.
    """

    dde_dim: int = 0
    hidden: int = 256
    layers: int = 2
    max_steps: int = 3
    step_mentions: int = 0
    name_match: bool = False

    def __post_init__(self) -> None:
        MlpConfig.__post_init__(self)
        if self.max_steps < 1:
            raise ConfigError(f"PlannerConfig: max_steps must be >= 1, got {self.max_steps}")
        if not 0 <= self.step_mentions <= min(STEP_MENTIONS, self.max_steps):
            raise ConfigError(
                f"PlannerConfig: step_mentions must be in 0..{min(STEP_MENTIONS, self.max_steps)}, "
                f"got {self.step_mentions}"
            )


class PlanScorer(Checkpointable):
    """MLP on ``[v_1 .. v_V || per step: (r_i, r_i * v_1 .. r_i * v_V, present_i, backward_i) ||
    per step i < M: r_i * m_i || per step: cos(r_i, v_1) .. cos(r_i, v_V), cos(r_i, m_i)]`` -> one
    logit per plan, where ``v`` are the :data:`SENTENCE_VIEWS` question embeddings and ``m_i`` the
    embedding of the ``i``-th :func:`walk_mentions` piece (``M`` = ``config.step_mentions``; the
    cosines only with ``config.name_match``).

    ``r_i`` is the text embedding of step ``i``'s relation (zeros past the plan's end); the
    products hand the MLP the match of each relation with each part of the question directly,
    and ``r_i * m_i`` the match with the words at that step's place in the nesting, which a
    sentence view keeps little of ("the mom of kid of X": which of the two comes first). The
    products are learned dimension by dimension from the training questions' wording; the
    cosines are one number per pair that the embedding model already makes high for a rewording
    ("appears in" / "starred actors"), so they carry to wording the training never used.
    Train with a softmax over a question's plans against :func:`gold_plans`.
    """

    KIND: ClassVar[str] = "plan_scorer"
    CONFIG: ClassVar[type[PlannerConfig]] = PlannerConfig

    def __init__(self, config: PlannerConfig) -> None:
        super().__init__(config)
        d, views = config.emb_dim, SENTENCE_VIEWS
        width = views * d + config.max_steps * ((views + 1) * d + 2) + config.step_mentions * d
        width += self._match_width()
        self.first = nn.Linear(width, config.hidden)
        self.mlp = mlp_tail(config.hidden, layers=config.layers, dropout=config.dropout)

    def forward(self, views: Tensor, relation_emb: Tensor, steps: Tensor) -> Tensor:
        """Logits [P] of one question's plans: :meth:`forward_batch` of a batch of one.

        Args:
            views: [QUESTION_VIEWS, d] embeddings of :func:`question_views`.
            relation_emb: [R, d] embeddings of the subgraph's local relations.
            steps: LongTensor [P, L] as in :class:`Plans`, L <= ``max_steps``.
        """
        return self.forward_batch(views[None], relation_emb[None], steps, steps.new_zeros(steps.shape[0]))

    def forward_batch(
        self, views: Tensor, relation_emb: Tensor, steps: Tensor, plan_question: Tensor
    ) -> Tensor:
        """Logits [P] of the plans of B questions in one pass, the first layer factorised as in
        the triple scorer.

        The first layer is linear in each step's block, so it is the views' projection plus, per
        step, a row that depends only on (position, signed relation): those L x 2R rows are
        projected once per question and each plan only adds its L rows. A 3-hop MetaQA subgraph
        has hundreds of plans but a few dozen signed relations. Why batches: on a GPU a step
        over one question's few hundred plans is launch-bound (docs/decisions.md), so training
        runs a step's questions as one pass; each plan reads only its own question's rows.

        Args:
            views: [B, QUESTION_VIEWS, d], each question's :func:`question_views` embeddings.
            relation_emb: [B, R, d], each question's local relations, zero rows past its own.
            steps: LongTensor [P, L], each plan's steps as in :class:`Plans` (signed ids of its
                question's relations, -1 past its end), L <= ``max_steps``.
            plan_question: LongTensor [P], the question (0..B-1) of each plan.
        """
        d, max_steps, m = self.config.emb_dim, self.config.max_steps, self.config.step_mentions
        v, hidden = SENTENCE_VIEWS, self.config.hidden
        sentences, mentions = views[:, :v], views[:, v : v + m]
        w_views, w_steps, w_mentions, w_cosines = self.first.weight.split(
            [v * d, max_steps * ((v + 1) * d + 2), m * d, self._match_width()], dim=1
        )
        w_steps = w_steps.reshape(-1, max_steps, (v + 1) * d + 2)  # [h, L, (V + 1) d + 2]
        w_rel, w_prod, w_present, w_backward = w_steps.split([d, v * d, 1, 1], dim=2)
        # Row (b, i, r) of the step table: W_rel_i r + sum_k W_prod_ik (r * v_bk) + W_mention_i
        # (r * m_bi) + W_present_i.
        w_prod = w_prod.reshape(*w_prod.shape[:2], v, d)
        w_aligned = nn.functional.pad(
            w_mentions.reshape(hidden, m, d) * mentions[:, None], (0, 0, 0, max_steps - m)
        )  # [B, h, L, d]
        w_match = w_rel + torch.einsum("hlkd,bkd->bhld", w_prod, sentences) + w_aligned
        forward_rows = torch.einsum("bhld,brd->blrh", w_match, relation_emb)
        if self.config.name_match:
            cosines = name_match_features(views, relation_emb, max_steps, m)  # [B, L, R, V + 1]
            w_cosines = w_cosines.reshape(hidden, max_steps, v + 1)
            forward_rows = forward_rows + torch.einsum("hlk,blrk->blrh", w_cosines, cosines)
        forward_rows = forward_rows + w_present.squeeze(2).T.unsqueeze(1)
        backward_rows = forward_rows + w_backward.squeeze(2).T.unsqueeze(1)
        # [B * L * 2R, h], by (question, position, signed relation)
        table = torch.stack([forward_rows, backward_rows], dim=3).flatten(0, 3)
        present = steps >= 0
        signed = 2 * relation_emb.shape[1]
        position = torch.arange(steps.shape[1], device=steps.device) * signed
        first_row = (plan_question * (max_steps * signed)).unsqueeze(1)
        rows = (steps.clamp(min=0) + position + first_row).flatten()
        h1 = nn.functional.embedding_bag(
            rows,
            table,
            torch.arange(0, rows.numel(), steps.shape[1], device=steps.device),
            mode="sum",
            per_sample_weights=present.flatten().to(table.dtype),
        )
        per_question = sentences.flatten(1) @ w_views.T  # [B, h]
        return self.mlp(h1 + per_question[plan_question] + self.first.bias).squeeze(-1)

    def plan_logits(self, prepared: PreparedQuestion, relation_emb: Tensor, steps: Tensor) -> Tensor:
        """Logits [P] for ``prepared``'s plans, from its question views."""
        return self(prepared.question_views, relation_emb, steps)

    def logits_many(
        self, views: Sequence[Tensor], relation_emb: Sequence[Tensor], steps: Sequence[Tensor]
    ) -> list[Tensor]:
        """Each question's plan logits ([P_b], as :meth:`forward` gives them) from one
        :meth:`forward_batch` over all of them (:func:`plan_batch` lays them out)."""
        batch = plan_batch(views, relation_emb, steps)
        return list(self.forward_batch(*batch).split([s.shape[0] for s in steps]))

    def forward_concat(self, views: Tensor, relation_emb: Tensor, steps: Tensor) -> Tensor:
        """Logits [P] from the explicit per-plan input (the reference :meth:`forward` equals)."""
        p, length = steps.shape
        v, m = SENTENCE_VIEWS, self.config.step_mentions
        padded = steps.new_full((p, self.config.max_steps), -1)
        padded[:, :length] = steps
        present = padded >= 0
        relation = relation_emb[padded.clamp(min=0) // 2] * present.unsqueeze(-1)  # [P, L, d]
        flags = torch.stack([present, present & (padded % 2 == 1)], dim=-1).to(relation.dtype)
        products = [relation * view for view in views[:v]]
        per_step = torch.cat([relation, *products, flags], dim=-1).flatten(1)
        aligned = (relation[:, :m] * views[v : v + m]).flatten(1)
        parts = [views[:v].flatten().expand(p, -1), per_step, aligned]
        if self.config.name_match:
            cosines = name_match_features(views, relation_emb, self.config.max_steps, m)  # [L, R, V + 1]
            position = torch.arange(self.config.max_steps).expand(p, -1)
            per_plan = cosines[position, padded.clamp(min=0) // 2] * present.unsqueeze(-1)  # [P, L, V + 1]
            parts.append(per_plan.flatten(1))
        return self.mlp(self.first(torch.cat(parts, dim=1))).squeeze(-1)

    def _match_width(self) -> int:
        """Inputs of the name-match cosines: :data:`SENTENCE_VIEWS` + 1 per step, or none."""
        return self.config.max_steps * (SENTENCE_VIEWS + 1) if self.config.name_match else 0


def plan_batch(
    views: Sequence[Tensor], relation_emb: Sequence[Tensor], steps: Sequence[Tensor]
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Several questions' planner inputs as :meth:`PlanScorer.forward_batch` reads them: views
    stacked [B, V, d], relation embeddings stacked and zero-padded to the widest [B, R, d], plans
    concatenated [P, L] (-1 past each plan's end) and the question of each plan [P]; on the
    device of ``views[0]``."""
    device = views[0].device
    widest = max(r.shape[0] for r in relation_emb)
    longest = max(s.shape[1] for s in steps)
    padded = [nn.functional.pad(r, (0, 0, 0, widest - r.shape[0])) for r in relation_emb]
    plans = torch.cat([nn.functional.pad(s, (0, longest - s.shape[1]), value=-1) for s in steps])
    counts = torch.tensor([s.shape[0] for s in steps])
    plan_question = torch.repeat_interleave(torch.arange(len(steps)), counts)
    return (
        torch.stack(list(views)),
        torch.stack(padded).to(device),
        plans.to(device),
        plan_question.to(device),
    )


def name_match_features(views: Tensor, relation_emb: Tensor, steps: int, mentions: int) -> Tensor:
    """FloatTensor [..., steps, R, SENTENCE_VIEWS + 1]: per plan position and relation, the
    cosines of the relation's name with each sentence view, then with the walk-order mention at
    that position (0 past the ``mentions`` the planner reads).

    Args:
        views: [..., QUESTION_VIEWS, d] embeddings of :func:`question_views` (leading dims: a batch).
        relation_emb: [..., R, d] embeddings of the relations' names in words (a zero row's
            cosines are 0).
    """
    unit = nn.functional.normalize(views, dim=-1)
    names = nn.functional.normalize(relation_emb, dim=-1)
    lead, relations = names.shape[:-2], names.shape[-2]
    sentences = names @ unit[..., :SENTENCE_VIEWS, :].transpose(-1, -2)  # [..., R, V]
    with_sentences = sentences.unsqueeze(-3).expand(*lead, steps, relations, SENTENCE_VIEWS)
    with_mentions = names.new_zeros(*lead, steps, relations, 1)
    used = min(mentions, steps)
    mentioned = names @ unit[..., SENTENCE_VIEWS : SENTENCE_VIEWS + used, :].transpose(
        -1, -2
    )  # [..., R, used]
    with_mentions[..., :used, :, 0] = mentioned.transpose(-1, -2)
    return torch.cat([with_sentences, with_mentions], dim=-1)


#: The planners :func:`rank_plans` runs; both rate a question's plans with ``plan_logits``.
Planner = PlanScorer | AttentionPlanScorer
#: Checkpoint ``kind`` -> planner class.
PLANNER_KINDS: dict[str, type[Planner]] = {cls.KIND: cls for cls in (PlanScorer, AttentionPlanScorer)}


def planner_from_checkpoint(data: dict[str, Any], *, embedder_model_id: str) -> Planner | NameMatchPlanner:
    """The planner a checkpoint's ``planner`` entry holds, whichever kind it is (the name match
    of a checkpoint trained on questions made from the graph alone has no weights).

    Raises:
        CheckpointError: the entry's ``kind`` is no planner's (or see ``from_checkpoint``).
    """
    if data.get("kind") == NameMatchPlanner.KIND:
        return NameMatchPlanner()
    cls = PLANNER_KINDS.get(str(data.get("kind")))
    if cls is None:
        raise CheckpointError(
            f"the checkpoint's planner is a {data.get('kind')!r}, expected one of {sorted(PLANNER_KINDS)}",
            hint="re-train with this kgqa version",
        )
    return cls.from_checkpoint(data, embedder_model_id=embedder_model_id)


@dataclass(frozen=True, slots=True)
class RankedPlans:
    """A question's plans with the planner's probabilities (a softmax over them) and raw scores.

    ``logits`` are the planner's scores before the softmax: unlike the probabilities they compare
    across topics, which is what disambiguation needs (a tag with a single plan gets probability 1).
    """

    plans: Plans
    probabilities: Tensor
    logits: Tensor | None = None

    def best_logit(self) -> float:
        """The likeliest plan's raw score (-inf without plans or logits)."""
        if self.logits is None or self.logits.numel() == 0:
            return float("-inf")
        return float(self.logits.max())

    def top_ends(self) -> Tensor:
        """LongTensor: the local entities where the likeliest plan's walks end (empty without plans)."""
        if not self.probabilities.numel():
            return self.plans.end_entity[:0]
        return self.plans.end_entity[self.plans.end_plan == int(self.probabilities.argmax())]

    def reach(self, num_nodes: int) -> Tensor:
        """[N, 2] :func:`plan_reach`, the reader's plan columns."""
        return plan_reach(self.probabilities, self.plans, num_nodes)

    def likeliest_ending_at(self, entity: int) -> int | None:
        """The likeliest plan with a walk ending at the local ``entity``, or None where none does."""
        ending = self.plans.end_plan[self.plans.end_entity == entity]
        if not ending.numel():
            return None
        return int(ending[self.probabilities[ending].argmax()])

    def describe(self, sub: Subgraph, k: int, first: int | None = None) -> list[dict[str, Any]]:
        """The ``k`` likeliest plans as ``{"steps": ["<-WRITTEN_BY", "DIRECTED_BY->"], "probability"}``
        (``<-`` marks a step that crosses triples from tail to head); plan ``first``, where given,
        leads and the likeliest others follow."""
        ranked = torch.argsort(self.probabilities, descending=True).tolist()
        best = ([first] + [p for p in ranked if p != first] if first is not None else ranked)[:k]
        out = []
        for p in best:
            names = [
                f"<-{sub.relation_types[s // 2]}" if s % 2 else f"{sub.relation_types[s // 2]}->"
                for s in self.plans.steps[p].tolist()
                if s >= 0
            ]
            out.append({"steps": names, "probability": round(float(self.probabilities[p]), 6)})
        return out

    def triple_support(self, sub: Subgraph, k: int = GUIDING_PLANS) -> Tensor:
        """FloatTensor [E]: per triple, the probability of the likeliest of the ``k`` best plans
        with a walk through it (0 off their walks)."""
        support = torch.zeros(sub.num_triples)
        for p in torch.argsort(self.probabilities, descending=True)[:k].tolist():
            on_walk = plan_walk_triples(sub, self.plans.signed_steps(p))
            support[on_walk] = support[on_walk].clamp(min=float(self.probabilities[p]))
        return support


def plan_guided_scores(probabilities: Tensor, ranked: RankedPlans, sub: Subgraph) -> Tensor:
    """FloatTensor [E] in [0, 1]: the mean of each triple's probability and its plan support.

    A triple on a likely plan's walk outranks every triple off the plans, and within the walks the
    scorer still orders, so the scorer's strong first and second hops of other relation paths no
    longer crowd out a long question's answer (docs/decisions.md).
    """
    return (probabilities + ranked.triple_support(sub)) / 2


#: The name prior's weight for a planner trained on :data:`PRIOR_LABELS` labelled questions or
#: more: measured right from 200 labels up (docs/decisions.md).
NAME_PRIOR = 0.3
#: How many labelled questions the relation-name match counts as: below them the prior's weight
#: rises as their count falls (:func:`name_prior_for`).
PRIOR_LABELS = 150


def name_prior_for(labelled: int | None) -> float:
    """The weight of the relation-name match beside a planner trained on ``labelled`` labelled
    questions (None: unrecorded): :data:`NAME_PRIOR` x ``max(1, PRIOR_LABELS / labelled)``.

    Why: the name match is a prior and the planner's logits the evidence, and evidence grows
    with the questions it was learnt from. At 50 labels the planner has met few relations and
    wordings, a weight of 0.3 answered below the train-free path on both graphs measured, and
    about three times that answered best (docs/decisions.md); from 200 up 0.3 was best.
    """
    if not labelled:
        return NAME_PRIOR
    return NAME_PRIOR * max(1.0, PRIOR_LABELS / labelled)


def question_plans(planner: Planner | NameMatchPlanner, prepared: PreparedQuestion) -> Plans:
    """The plans ``prepared``'s subgraph can walk, at most as long as its hops and ``planner``'s
    ``max_steps`` (:func:`rank_plans` says why not exactly as long)."""
    return enumerate_plans(prepared.subgraph, min(prepared.hops, planner.config.max_steps))


def rank_plans_many(
    planner: Planner | NameMatchPlanner,
    prepared: Sequence[PreparedQuestion],
    tables: tuple[EntityTable, RelationTable],
    *,
    name_prior: float = 0.0,
    answer_type: float = 0.0,
    answer_kind: float = 0.0,
    tail_kind: float = 0.0,
) -> list[RankedPlans]:
    """:func:`rank_plans` of each question; the MLP planner rates all their plans in one pass
    (:meth:`PlanScorer.logits_many`: the same arithmetic per question, each operation's fixed
    cost paid once), the other planners one question at a time."""
    if not isinstance(planner, PlanScorer):
        return [
            rank_plans(
                planner,
                p,
                tables,
                name_prior=name_prior,
                answer_type=answer_type,
                answer_kind=answer_kind,
                tail_kind=tail_kind,
            )
            for p in prepared
        ]
    plans = [question_plans(planner, p) for p in prepared]
    rated = [i for i, ps in enumerate(plans) if ps.num_plans]
    device = model_device(planner)
    relation_emb = [tables[1].matrix[p.relation_rows] for p in prepared]
    logits = (
        planner.logits_many(
            [prepared[i].question_views.to(device) for i in rated],
            [relation_emb[i].to(device) for i in rated],
            [plans[i].steps.to(device) for i in rated],
        )
        if rated
        else []
    )
    by_question = dict(zip(rated, logits, strict=True))
    return [
        _ranked(
            planner,
            p,
            tables[0],
            relation_emb[i],
            plans[i],
            by_question[i].cpu(),
            name_prior,
            answer_type,
            answer_kind,
            tail_kind,
        )
        if i in by_question
        else rank_plans(planner, p, tables, plans[i])  # no plans: nothing to rate
        for i, p in enumerate(prepared)
    ]


def rank_plans(
    planner: Planner | NameMatchPlanner,
    prepared: PreparedQuestion,
    tables: tuple[EntityTable, RelationTable],
    plans: Plans | None = None,
    *,
    name_prior: float = 0.0,
    answer_type: float = 0.0,
    answer_kind: float = 0.0,
    tail_kind: float = 0.0,
) -> RankedPlans:
    """Enumerate the plans ``prepared``'s subgraph can walk and rate them with ``planner``.

    Plans are at most as long as the question's hops (``prepared.hops``), capped at the planner's
    ``max_steps``, not exactly as long: a 2-hop subgraph also holds 3-step walks (to entities it
    reaches by a shorter route), and the planner must be able to rank them below the gold plan.
    ``plans``: that enumeration when the caller already has it (training reuses it).

    ``name_prior``: the weight of the relation-name match (:class:`NameMatchPlanner`'s logits,
    from ``prepared.run_words``) added to a trained planner's logits. Why: a planner trained on
    few labelled questions has met few of the graph's relations and wordings, and the names
    still tell which relation a word asks for (docs/decisions.md: 50 labelled questions, Hit@1
    0.86 -> 0.88 on held-out MetaQA 2-hop, 0.86 -> 0.91 on PQ-2H, none lost with 1,000). Ignored for
    the name match itself and where ``prepared`` has no word runs.

    ``answer_type``: the weight of the answers' kind (:func:`answer_type_fit` of
    ``prepared.answer_noun`` with each plan's walk ends, in cosine units scaled as the name
    match's are), for any planner; ignored where ``prepared`` has no answer noun.
    ``answer_kind``: the same for the kinds the graph's schema gives the walk ends
    (:func:`answer_kind_fit` of ``prepared.answer_kinds``: Freebase's ``domain.type.property``
    names); ignored where ``prepared`` has none.
    ``tail_kind``: the same for the kinds plain relation names give the walk ends they point at,
    as a loss only (:func:`tail_kind_fit` of ``prepared.tail_kinds``).

    A trained planner's plans that end only at nameless nodes hand their probability to the
    steps through them (:func:`through_mediators`).
    """
    if plans is None:
        plans = question_plans(planner, prepared)
    views = prepared.question_views
    if plans.num_plans == 0:
        return RankedPlans(plans, views.new_zeros(0))
    relation_emb = tables[1].matrix[prepared.relation_rows]
    # A trained planner runs on its device (one copy there and back), the name matcher on the CPU.
    device = model_device(planner) if isinstance(planner, nn.Module) else torch.device("cpu")
    tokens = prepared.question_tokens
    on_device = replace(
        prepared,
        question_views=prepared.question_views.to(device),
        question_tokens=None if tokens is None else tokens.to(device),
    )
    logits = planner.plan_logits(on_device, relation_emb.to(device), plans.steps.to(device)).cpu()
    return _ranked(
        planner,
        prepared,
        tables[0],
        relation_emb,
        plans,
        logits,
        name_prior,
        answer_type,
        answer_kind,
        tail_kind,
    )


def _ranked(
    planner: Planner | NameMatchPlanner,
    prepared: PreparedQuestion,
    entity_table: EntityTable,
    relation_emb: Tensor,
    plans: Plans,
    logits: Tensor,
    name_prior: float,
    answer_type: float,
    answer_kind: float,
    tail_kind: float,
) -> RankedPlans:
    """``plans`` ranked by ``planner``'s ``logits`` (on the CPU) plus the name prior and the
    answers' kind (from the ends' names, the graph's schema and its plain relation names); a
    trained planner's plans into nameless nodes handed on through them."""
    if name_prior and prepared.run_words is not None and not isinstance(planner, NameMatchPlanner):
        logits = logits + name_prior * NameMatchPlanner().plan_logits(prepared, relation_emb, plans.steps)
    named = entity_table.has_text[prepared.entity_rows]
    if answer_type and prepared.answer_noun is not None:
        fit = answer_type_fit(
            plans.end_plan,
            plans.end_entity,
            plans.num_plans,
            prepared.answer_noun,
            entity_table.matrix[prepared.entity_rows],
            named,
        )
        logits = logits + answer_type * SHARPNESS * fit
    if answer_kind and prepared.answer_kinds is not None:
        kinds = answer_kind_fit(plans.end_plan, plans.end_entity, plans.num_plans, prepared.answer_kinds)
        logits = logits + answer_kind * SHARPNESS * kinds
    if tail_kind and prepared.tail_kinds is not None:
        tails = tail_kind_fit(plans.end_plan, plans.end_entity, plans.num_plans, prepared.tail_kinds)
        logits = logits + tail_kind * SHARPNESS * tails
    probabilities = torch.softmax(logits, dim=0)
    if not isinstance(planner, NameMatchPlanner):  # which prices a step through a mediator itself
        probabilities = through_mediators(probabilities, plans, named)
    return RankedPlans(plans, probabilities, logits)


def through_mediators(probabilities: Tensor, plans: Plans, named: Tensor) -> Tensor:
    """FloatTensor [P]: ``probabilities`` where each plan whose walks all end at nameless nodes
    (``named`` [N] False: Freebase CVTs, named by their mid) hands its probability to the plans
    one step longer that begin with it, in proportion to theirs (equally where they all have
    none); a plan without such a longer plan keeps its own. The sum is unchanged.

    Why: a nameless node stands for one fact of several parts and answers nothing itself.
    "What is the predominant religion in Israel" steps into Israel's religion-percentage
    records, and a trained planner sure of that step (0.999 on WebQSP-evidence) means the step
    through them to the religions; left there, the reader answered from the plans' leftovers.
    Trained planners only (:func:`rank_plans`): the name match scores a step into a mediator
    and the step out as one relation already, and handing on its leftovers moved as many of
    its WebQSP tuning answers wrong as right (docs/decisions.md).
    """
    ends = torch.bincount(plans.end_plan, minlength=plans.num_plans)
    named_ends = torch.bincount(
        plans.end_plan, weights=named[plans.end_entity].float(), minlength=plans.num_plans
    )
    stuck = (ends > 0) & (named_ends == 0)
    if not bool(stuck.any()):
        return probabilities
    parent = _parent_plans(plans)
    child = parent >= 0
    parent_of = parent.clamp(min=0)
    children = torch.zeros_like(probabilities).index_add_(0, parent_of[child], torch.ones(int(child.sum())))
    mass = torch.zeros_like(probabilities).index_add_(0, parent_of[child], probabilities[child])
    # each child's part of its parent's probability: its own among its siblings', else equal
    part = torch.where(
        mass[parent_of] > 0,
        probabilities / mass[parent_of].clamp(min=1e-30),
        1 / children[parent_of].clamp(min=1),
    )
    out = probabilities.clone()
    lengths = plans.lengths()
    for length in range(1, plans.steps.shape[1]):  # shortest first: a handed-on share may go on
        giving = stuck & (lengths == length) & (children > 0)
        taking = child & giving[parent_of]
        out[taking] += out[parent_of[taking]] * part[taking]
        out[giving] = 0.0
    return out


def _parent_plans(plans: Plans) -> Tensor:
    """LongTensor [P]: per plan, the plan one step shorter that begins it (-1 for a one-step plan
    or where no such plan was enumerated). Rows are matched whole (``torch.unique``), so no two
    plans are confused: a number made of a plan's steps is one to one only while it fits 64 bits."""
    steps, lengths = plans.steps, plans.lengths()
    shorter = steps.clone()
    shorter[torch.arange(len(steps)), (lengths - 1).clamp(min=0)] = -1  # each plan less its last step
    _, row = torch.unique(torch.cat([steps, shorter]), dim=0, return_inverse=True)
    plan_of_row = torch.full((int(row.max()) + 1,), -1, dtype=torch.long)
    plan_of_row[row[: len(steps)]] = torch.arange(len(steps))
    parent = plan_of_row[row[len(steps) :]]
    return torch.where(lengths > 1, parent, torch.full_like(parent, -1))
