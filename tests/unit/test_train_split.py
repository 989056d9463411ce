"""Question splits and per-question hop counts used by `kgqa train` and `kgqa eval --heldout`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgqa.checkpoint_file import save_checkpoint
from kgqa.errors import CheckpointError
from kgqa.eval.session import heldout_part
from kgqa.eval.splits import SplitSettings, hops_reader, oracle_hop_count
from kgqa.types import QAExample


def _q(i: int, *, stem: str = "f", **kw: object) -> QAExample:
    return QAExample(qid=f"{stem}:{i}", question=f"q{i}", topic_ids=("a",), answers=("b",), line=i, **kw)  # type: ignore[arg-type]


def test_split_parts_are_disjoint_complete_and_stable() -> None:
    examples = [_q(i) for i in range(2000)]
    parts = SplitSettings(heldout_fraction=0.2, val_fraction=0.1, seed=0).parts(examples)
    ids = {k: {e.qid for e in v} for k, v in parts.items()}
    assert ids["train"].isdisjoint(ids["val"]) and ids["train"].isdisjoint(ids["heldout"])
    assert ids["val"].isdisjoint(ids["heldout"])
    assert sum(len(v) for v in ids.values()) == 2000
    assert 0.16 < len(ids["heldout"]) / 2000 < 0.24 and 0.07 < len(ids["val"]) / 2000 < 0.13
    # stable when the file grows or is reordered: the held-out part of a subset is a subset
    again = SplitSettings(heldout_fraction=0.2, val_fraction=0.1, seed=0).parts(
        list(reversed(examples[:500]))
    )
    assert {e.qid for e in again["heldout"]} == {e.qid for e in examples[:500]} & ids["heldout"]


def test_oracle_hop_count_uses_gold_path_then_qtype_then_default() -> None:
    path = ((("a", "r1", "x"), ("x", "r2", "b")),)
    assert oracle_hop_count(_q(0, gold_paths=path), default=5) == 2
    assert oracle_hop_count(_q(0, qtype="movie_to_actor_to_movie_to_writer"), default=5) == 3
    assert oracle_hop_count(_q(0, qtype="director_to_movie"), default=5) == 1
    assert oracle_hop_count(_q(0), default=2) == 2


def test_hops_reader_gives_every_question_the_default_unless_the_oracle_is_asked_for() -> None:
    three_hop = _q(0, qtype="movie_to_actor_to_movie_to_writer")
    one_hop = _q(1, qtype="director_to_movie")
    auto = hops_reader("auto", 3)
    assert auto(three_hop) == auto(one_hop) == 3  # no hop count read from the file
    assert hops_reader("2", 3)(three_hop) == 2
    oracle = hops_reader("oracle", 3)
    assert (oracle(three_hop), oracle(one_hop)) == (3, 1)


@pytest.mark.parametrize("bad", ["0", "-1", "two", ""])
def test_hops_reader_refuses_what_is_no_hop_count(bad: str) -> None:
    with pytest.raises(ValueError, match="--hops"):
        hops_reader(bad, 3)


def test_split_follows_the_question_not_the_file_name() -> None:
    split = SplitSettings(heldout_fraction=0.2, val_fraction=0.1, seed=0)
    trained = split.parts([_q(i, stem="qa_train") for i in range(1000)])
    copied = split.parts([_q(i, stem="renamed_copy") for i in range(1000)])
    for part in ("train", "val", "heldout"):
        assert [e.question for e in trained[part]] == [e.question for e in copied[part]]
    # the same question with other answers is another question
    other = [QAExample(qid=e.qid, question=e.question, topic_ids=e.topic_ids, answers=("c",), line=e.line)
             for e in [_q(i) for i in range(1000)]]  # fmt: skip
    assert {e.question for e in split.parts(other)["heldout"]} != {e.question for e in trained["heldout"]}


def _checkpoint(tmp_path: Path, split: dict[str, object]) -> Path:
    path = tmp_path / "retriever.pt"
    save_checkpoint({"split": split, "sources": [[str(tmp_path / "qa_train.txt"), "metaqa"]]}, path)
    return path


def test_heldout_of_a_renamed_copy_equals_the_heldout_of_the_training_file(tmp_path: Path) -> None:
    checkpoint = _checkpoint(
        tmp_path, {"heldout_fraction": 0.2, "val_fraction": 0.1, "seed": 0, "key": "content"}
    )
    trained = heldout_part(
        [_q(i, stem="qa_train") for i in range(500)], checkpoint, tmp_path / "qa_train.txt"
    )
    copied = heldout_part([_q(i, stem="copy") for i in range(500)], checkpoint, tmp_path / "copy.txt")
    assert trained and [e.question for e in trained] == [e.question for e in copied]


def test_heldout_of_a_checkpoint_split_by_file_and_line_refuses_another_file_name(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path, {"heldout_fraction": 0.2, "val_fraction": 0.1, "seed": 0})
    same = heldout_part([_q(i, stem="qa_train") for i in range(500)], checkpoint, tmp_path / "qa_train.txt")
    assert (
        same
        == SplitSettings(0.2, 0.1, 0, key="qid").parts([_q(i, stem="qa_train") for i in range(500)])[
            "heldout"
        ]
    )
    with pytest.raises(CheckpointError, match="copy.txt") as info:
        heldout_part([_q(i, stem="copy") for i in range(500)], checkpoint, tmp_path / "copy.txt")
    assert info.value.hint
