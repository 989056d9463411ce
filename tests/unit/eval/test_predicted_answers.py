"""What the answer metrics score: every answer the reader gave, whatever its probability."""

from __future__ import annotations

from kgqa.answer import Answer, AnswerEntity
from kgqa.eval.run import predicted_answers


def _answer(reader: str, *answers: AnswerEntity) -> Answer:
    return Answer(question="q", topics=(), answers=answers, abstained=not answers, evidence=(), reader=reader)


def test_the_extractive_readers_answer_set_is_scored_whole() -> None:
    # a calibrated threshold of 0.3 let both through: the metrics must not cut them again
    answers = (AnswerEntity("Jaws", "m1", 0.9, True), AnswerEntity("Duel", "m2", 0.35, True))
    assert predicted_answers(_answer("extractive", *answers)) == ["m1", "m2"]


def test_an_answer_without_an_id_is_scored_by_its_name() -> None:
    answers = (AnswerEntity("Steven Spielberg", None, None, False),)
    assert predicted_answers(_answer("llm:gemma", *answers)) == ["Steven Spielberg"]
    assert predicted_answers(_answer("extractive")) == []
