"""The answer record: how many, where a question asks it."""

from __future__ import annotations

from kgqa.answer import Answer, AnswerEntity, asks_how_many


def _answer(question: str, names: list[str], reader: str = "extractive") -> Answer:
    answers = tuple(AnswerEntity(n, n, 0.5, True) for n in names)
    return Answer(question=question, topics=(), answers=answers, abstained=False, evidence=(), reader=reader)


def test_how_many_is_read_as_people_type_it() -> None:
    assert asks_how_many("How many films did Stanley Kubrick direct?")
    assert asks_how_many("so how many kids did cher have")
    assert asks_how_many("what's the number of films robert zemeckis directed")
    assert not asks_how_many("which films did stanley kubrick direct")
    assert not asks_how_many("who showed how manyfold the answers are")


def test_the_count_is_the_answer_sets_size_where_the_question_asks_how_many() -> None:
    films = ["Forrest Gump", "Cast Away"]
    counted = _answer("how many films did robert zemeckis direct", films)
    assert counted.count == 2 and counted.to_dict()["count"] == 2
    assert _answer("which films did robert zemeckis direct", films).count is None
    # an LLM answers in its own words ("2"): its one answer is no set to count
    assert _answer("how many films did robert zemeckis direct", ["2"], reader="llm:qwen").count is None
