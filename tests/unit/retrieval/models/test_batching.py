"""Many questions in one pass (``ScorerBatch.concat``) score, read and lose exactly what each
question does alone: the scorers, the reader and the per-question losses of training."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from subgraphs import D, random_batch

from kgqa.reasoning.extractive import EntityReader, ReaderConfig, ReaderFeatures, reader_features
from kgqa.retrieval.models.nn import question_bce
from kgqa.retrieval.models.scorer import ScorerBatch, ScorerConfig, TripleScorer

#: Questions of different sizes, so that wrong offsets would mix their entities and relations.
SIZES = ((9, 25, 4), (8, 7, 2), (12, 40, 3), (10, 3, 1))


def _questions(device: torch.device) -> list[ScorerBatch]:
    return [random_batch(seed, n=n, e=e, r=r).to(device) for seed, (n, e, r) in enumerate(SIZES)]


def test_concat_shifts_ids_and_records_each_rows_question() -> None:
    questions = _questions(torch.device("cpu"))
    batch = ScorerBatch.concat(questions)
    assert batch.question.shape == (len(SIZES), D)
    assert batch.num_entities == sum(n for n, _, _ in SIZES)
    assert batch.num_triples == sum(e for _, e, _ in SIZES)
    first, second = questions[0], questions[1]
    e0, n0, r0 = first.num_triples, first.num_entities, first.relation_emb.shape[0]
    assert torch.equal(batch.head[e0 : e0 + second.num_triples], second.head + n0)
    assert torch.equal(batch.rel[e0 : e0 + second.num_triples], second.rel + r0)
    expected = torch.cat([torch.full((q.num_triples,), i) for i, q in enumerate(questions)])
    assert torch.equal(batch.question_of_triples(), expected)
    expected = torch.cat([torch.full((q.num_entities,), i) for i, q in enumerate(questions)])
    assert torch.equal(batch.question_of_entities(), expected)


def test_concat_of_one_question_is_that_question() -> None:
    question = random_batch(0)
    assert ScorerBatch.concat([question]) is question
    with pytest.raises(ValueError, match="one-question"):
        ScorerBatch.concat([ScorerBatch.concat(_questions(torch.device("cpu")))])


@pytest.mark.parametrize("layers", [1, 2])
def test_triple_scorer_scores_a_batch_as_each_question_alone(layers: int, device: torch.device) -> None:
    torch.manual_seed(0)
    model = TripleScorer(ScorerConfig(emb_dim=D, hidden=16, layers=layers)).eval().to(device)
    questions = _questions(device)
    batch = ScorerBatch.concat(questions)
    with torch.no_grad():
        together = model(batch).split([q.num_triples for q in questions])
        for alone, q in zip(together, questions, strict=True):
            torch.testing.assert_close(alone, model(q))
        torch.testing.assert_close(model.forward_concat(batch), model(batch))


def test_reader_reads_a_batch_as_each_question_alone(device: torch.device) -> None:
    torch.manual_seed(0)
    model = EntityReader(ReaderConfig(emb_dim=D, hidden=16, plan_dim=2)).eval().to(device)
    questions = _questions(device)
    scores = [torch.rand(q.num_triples, device=device) for q in questions]
    plans = [torch.rand(q.num_entities, 2, device=device) for q in questions]
    topic = torch.tensor([0], device=device)
    features = [reader_features(s, q, topic, p) for s, q, p in zip(scores, questions, plans, strict=True)]
    with torch.no_grad():
        together = model.from_features(
            ScorerBatch.concat(questions), torch.cat(scores), ReaderFeatures.concat(features)
        )
        for alone, q, s, p in zip(
            together.split([q.num_entities for q in questions]), questions, scores, plans, strict=True
        ):
            torch.testing.assert_close(alone, model(q, s, topic, p))


def test_question_bce_is_each_questions_own_loss() -> None:
    torch.manual_seed(0)
    sizes = [3, 1, 6]
    logits, targets = torch.randn(sum(sizes)), torch.randint(0, 2, (sum(sizes),)).float()
    question = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    expected = torch.stack(
        [
            F.binary_cross_entropy_with_logits(x, y)
            for x, y in zip(logits.split(sizes), targets.split(sizes), strict=True)
        ]
    )
    torch.testing.assert_close(question_bce(logits, targets, question, len(sizes)), expected)


def test_a_batched_step_has_the_gradient_of_the_mean_of_per_question_steps() -> None:
    """One backward pass over a batch of questions gives the gradient that averaging each
    question's own loss gives: what ``TrainSettings.scorer_batch`` questions per step mean."""
    torch.manual_seed(0)
    model = TripleScorer(ScorerConfig(emb_dim=D, hidden=16, layers=2))
    questions = _questions(torch.device("cpu"))
    labels = [(torch.rand(q.num_triples) < 0.3).float() for q in questions]

    def gradient(loss: torch.Tensor) -> list[torch.Tensor]:
        model.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    batch = ScorerBatch.concat(questions)
    batched = question_bce(model(batch), torch.cat(labels), batch.question_of_triples(), len(questions))
    separate = torch.stack(
        [F.binary_cross_entropy_with_logits(model(q), y) for q, y in zip(questions, labels, strict=True)]
    )
    torch.testing.assert_close(batched.detach(), separate.detach())
    for a, b in zip(gradient(batched.mean()), gradient(separate.mean()), strict=True):
        torch.testing.assert_close(a, b)


def test_scorer_batch_to_moves_the_question_vectors(device: torch.device) -> None:
    batch = ScorerBatch.concat(_questions(torch.device("cpu"))).to(device)
    assert batch.entity_question is not None and batch.entity_question.device.type == device.type
    assert batch.relation_question is not None and batch.relation_question.device.type == device.type
