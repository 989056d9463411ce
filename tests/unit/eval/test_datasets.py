"""Question-file readers on small files written in each real format.

The lines are copied verbatim from ../shared/data (source file named above each literal).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgqa.errors import ConfigError, IngestError
from kgqa.eval.datasets import (
    FORMATS,
    metaqa_relation_path,
    read_line_numbers,
    read_questions,
    sample,
    split_train_val,
)
from kgqa.types import QAExample

# metaqa/1-hop/qa_dev.txt lines 1, 2 and 5001, and the matching qa_dev_qtype.txt lines.
METAQA = [
    "what movies did [Temuera Morrison] act in\tOnce Were Warriors|Tracker|River Queen",
    "what movies did [Evelyn Venable] act in\tAlice Adams|Death Takes a Holiday|The Little Colonel",
    "what is popular opinion about [The Bad News Bears Go to Japan]\tbad",
]
METAQA_QTYPES = ["actor_to_movie", "actor_to_movie", "movie_to_imdbrating"]

# pathquestion/PQ-2H.train.txt lines 1 and 30.
PQ_2H = [
    "which nationality is frederica_of_mecklenburg-strelitz 's couple ?\tunited_kingdom(united_kingdom/)\t"
    "frederica_of_mecklenburg-strelitz#spouse#ernest_augustus_i_of_hanover#nationality#united_kingdom"
    "#<end>#united_kingdom",
    "is charles_lennox_1st_duke_of_richmond 's offspring a man or a woman ?\tfemale(male/female/)\t"
    "charles_lennox_1st_duke_of_richmond#children#anne_van_keppel_countess_of_albemarle#gender#female"
    "#<end>#female",
]
# pathquestion/PQL-2H.train.txt line 177 (PQL: leading space, no <end>, an answer with parentheses).
PQL_2H = (
    " what is the rating of Earthquake 's tracks ?\tPG_(USA)(PG_(USA)/)\t"
    "Earthquake#__music__recording__tracks#Earthquake#__film__film__rating#PG_(USA)"
)

_WC_CONTEXT = (
    "Alan_PULIDO#plays_in_club#Tigres_UANL///Alan_PULIDO#plays_position#Forward///Alan_PULIDO#is_aged#23"
    "///Alan_PULIDO#wears_number#11///Alan_PULIDO#plays_for_country#Mexico///Tigres_UANL#is_in_country#Mexico"
)
# wc2014/WC-P2.train.txt lines 1 and 2.
WC_P2 = [
    "where is the football club that Alan_PULIDO plays for ?\tMexico\t"
    f"Alan_PULIDO#plays_in_club#Tigres_UANL#is_in_country#Mexico\tMexico/\t{_WC_CONTEXT}",
    "name a soccer club that has a player from Mexico ?\tTigres_UANL\t"
    "Mexico#plays_for_country_inverse#Alan_PULIDO#plays_in_club#Tigres_UANL\t"
    "CF_Monterrey/CA_Monarcas_Morelia/Atlante_FC/CF_Pachuca/Tigres_UANL/Cruz_Azul_FC/Club_Leon/"
    f"Club_Santos_Laguna/Puebla_FC/Club_America/Deportivo_Toluca_FC/Club_Tijuana/\t{_WC_CONTEXT}",
]
# wc2014/WC-C.train.txt line 1.
WC_C = (
    "name a player who plays at Forward position at the club Tigres_UANL ?\tAlan_PULIDO\t"
    "Forward#plays_position_inverse#Alan_PULIDO#<end>#Alan_PULIDO*"
    "Tigres_UANL#plays_in_club_inverse#Alan_PULIDO#<end>#Alan_PULIDO\tAlan_PULIDO/\t"
    f"{_WC_CONTEXT}\tForward/Tigres_UANL"
)
# tests/fixtures/rog_excerpt.jsonl line 1 (WebQSP in the RoG shape), graph shortened; then a line
# without id and a_entity.
ROG = [
    '{"id": "WebQTest-12", "question": "who did kim richards marry", "answer": ["G. Monty Brinson"], '
    '"q_entity": ["Kim Richards"], "a_entity": ["G. Monty Brinson"], '
    '"graph": [["Kim Richards", "people.person.spouse_s", "m.0j4k1c9"]], "choices": []}',
    '{"question": "what country is paris in", "answer": ["France"], "q_entity": ["Paris"]}',
]


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_read_questions_metaqa_removes_brackets_and_pairs_qtypes(tmp_path: Path) -> None:
    path = _write(tmp_path / "1-hop" / "qa_dev.txt", METAQA)
    _write(tmp_path / "1-hop" / "qa_dev_qtype.txt", METAQA_QTYPES)
    examples = list(read_questions(path, "metaqa"))
    assert examples[0] == QAExample(
        qid="qa_dev:0",
        question="what movies did Temuera Morrison act in",
        topic_ids=("Temuera Morrison",),
        answers=("Once Were Warriors", "Tracker", "River Queen"),
        line=0,
        qtype="actor_to_movie",
        relation_paths=(("starred_actors",),),
    )
    assert examples[2].relation_paths == (("has_imdb_rating",),)
    assert examples[2].topic_ids == ("The Bad News Bears Go to Japan",)
    assert examples[2].answers == ("bad",)
    assert [e.qtype for e in examples] == METAQA_QTYPES
    assert [e.qid for e in examples] == ["qa_dev:0", "qa_dev:1", "qa_dev:2"]


def test_read_questions_metaqa_without_qtype_file_leaves_qtype_empty(tmp_path: Path) -> None:
    path = _write(tmp_path / "qa_dev.txt", METAQA)
    assert {e.qtype for e in read_questions(path, "metaqa")} == {""}


def test_read_questions_filters_lines_then_limits(tmp_path: Path) -> None:
    path = _write(tmp_path / "qa_dev.txt", METAQA)
    _write(tmp_path / "qa_dev_qtype.txt", METAQA_QTYPES)
    kept = list(read_questions(path, "metaqa", lines={0, 2}))
    assert [(e.line, e.qtype) for e in kept] == [(0, "actor_to_movie"), (2, "movie_to_imdbrating")]
    assert [e.line for e in read_questions(path, "metaqa", lines={1, 2}, limit=1)] == [1]
    assert [e.line for e in read_questions(path, "metaqa", limit=2)] == [0, 1]
    assert list(read_questions(path, "metaqa", limit=0)) == []


def test_metaqa_relation_path_names_one_relation_per_step_whatever_the_direction() -> None:
    assert metaqa_relation_path("movie_to_director_to_movie_to_language") == (
        "directed_by",
        "directed_by",
        "in_language",
    )
    assert metaqa_relation_path("tag_to_movie") == ("has_tags",)
    assert metaqa_relation_path("movie_to_imdbvotes") == ("has_imdb_votes",)
    # Outside MetaQA's schema (two non-movie slots side by side, unknown slot): no path.
    assert metaqa_relation_path("actor_to_director") == ()
    assert metaqa_relation_path("movie_to_budget") == ()
    assert metaqa_relation_path("") == ()


def test_read_line_numbers_reads_consistent_idx_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "qa_dev_consistent_idx.txt", ["0", "2", "", "7"])
    assert read_line_numbers(path) == {0, 2, 7}
    bad = _write(tmp_path / "bad_idx.txt", ["0", "x1"])
    with pytest.raises(IngestError, match=r"bad_idx\.txt:2: expected a 0-based line number"):
        read_line_numbers(bad)


def test_read_questions_pathquestion_gives_alternatives_topic_and_gold_path(tmp_path: Path) -> None:
    path = _write(tmp_path / "PQ-2H.train.txt", PQ_2H)
    first, second = read_questions(path, "pathquestion")
    assert first == QAExample(
        qid="PQ-2H.train:0",
        question="which nationality is frederica_of_mecklenburg-strelitz 's couple ?",
        topic_ids=("frederica_of_mecklenburg-strelitz",),
        answers=("united_kingdom",),
        line=0,
        gold_paths=(
            (
                ("frederica_of_mecklenburg-strelitz", "spouse", "ernest_augustus_i_of_hanover"),
                ("ernest_augustus_i_of_hanover", "nationality", "united_kingdom"),
            ),
        ),
        relation_paths=(("spouse", "nationality"),),
    )
    assert second.answers == ("female", "male")
    assert second.gold_paths[0][1] == ("anne_van_keppel_countess_of_albemarle", "gender", "female")


def test_read_questions_pathquestion_pql_without_end_and_parenthesised_answer(tmp_path: Path) -> None:
    (example,) = read_questions(_write(tmp_path / "PQL-2H.train.txt", [PQL_2H]), "pathquestion")
    assert example.question == "what is the rating of Earthquake 's tracks ?"
    assert example.answers == ("PG_(USA)",)
    assert example.topic_ids == ("Earthquake",)
    assert example.gold_paths == (
        (
            ("Earthquake", "__music__recording__tracks", "Earthquake"),
            ("Earthquake", "__film__film__rating", "PG_(USA)"),
        ),
    )


def test_read_questions_wc2014_path_questions(tmp_path: Path) -> None:
    first, second = read_questions(_write(tmp_path / "WC-P2.train.txt", WC_P2), "wc2014")
    assert first == QAExample(
        qid="WC-P2.train:0",
        question="where is the football club that Alan_PULIDO plays for ?",
        topic_ids=("Alan_PULIDO",),
        answers=("Mexico",),
        line=0,
        gold_paths=(
            (("Alan_PULIDO", "plays_in_club", "Tigres_UANL"), ("Tigres_UANL", "is_in_country", "Mexico")),
        ),
        relation_paths=(
            ("plays_in_club", "is_in_country"),
            ("plays_in_club", "is_in_country_inverse"),
            ("plays_in_club_inverse", "is_in_country"),
            ("plays_in_club_inverse", "is_in_country_inverse"),
        ),
    )
    assert second.topic_ids == ("Mexico",)
    assert second.answers[0] == "Tigres_UANL" and len(second.answers) == 12
    assert "CF_Monterrey" in second.answers and "" not in second.answers
    assert second.gold_paths[0][0] == ("Mexico", "plays_for_country_inverse", "Alan_PULIDO")


def test_read_questions_wc2014_conjunctive_question_has_two_paths_and_topics(tmp_path: Path) -> None:
    (example,) = read_questions(_write(tmp_path / "WC-C.train.txt", [WC_C]), "wc2014")
    assert example.topic_ids == ("Forward", "Tigres_UANL")
    assert example.answers == ("Alan_PULIDO",)
    assert example.gold_paths == (
        (("Forward", "plays_position_inverse", "Alan_PULIDO"),),
        (("Tigres_UANL", "plays_in_club_inverse", "Alan_PULIDO"),),
    )
    # Each step also as its twin: WC2014 states every fact both ways.
    assert example.relation_paths == (
        ("plays_position",),
        ("plays_position_inverse",),
        ("plays_in_club",),
        ("plays_in_club_inverse",),
    )


def test_read_questions_rog_jsonl_uses_file_ids_and_a_entity(tmp_path: Path) -> None:
    first, second = read_questions(_write(tmp_path / "webqsp.jsonl", ROG), "rog-jsonl")
    assert first == QAExample(
        qid="WebQTest-12",
        question="who did kim richards marry",
        topic_ids=("Kim Richards",),
        answers=("G. Monty Brinson",),
        line=0,
    )
    assert (second.qid, second.topic_ids, second.answers) == ("webqsp:1", ("Paris",), ("France",))


def test_read_questions_rog_jsonl_takes_optional_relation_paths(tmp_path: Path) -> None:
    line = '{"question": "q", "q_entity": ["Jaws"], "a_entity": ["x"], "relation_paths": [["directed_by"]]}'
    (example,) = read_questions(_write(tmp_path / "mine.jsonl", [line]), "rog-jsonl")
    assert example.relation_paths == (("directed_by",),)


@pytest.mark.parametrize(
    ("fmt", "bad", "message"),
    [
        ("metaqa", "what movies did [Tom Hanks] act in", "expected 2 tab-separated fields"),
        ("pathquestion", "q ?\ta(a/)\tx#r", "gold path"),
        ("wc2014", "q ?\ta", "expected 4-6 tab-separated fields"),
        ("rog-jsonl", '{"question": ', "invalid JSON"),
        ("rog-jsonl", '{"question": "q", "relation_paths": ["directed_by"]}', "'relation_paths' must be"),
    ],
)
def test_read_questions_malformed_line_raises_ingest_error_with_file_and_line(
    tmp_path: Path, fmt: str, bad: str, message: str
) -> None:
    good = {"metaqa": METAQA[0], "pathquestion": PQ_2H[0], "wc2014": WC_P2[0], "rog-jsonl": ROG[0]}[fmt]
    path = _write(tmp_path / "questions.txt", [good, bad])
    examples = read_questions(path, fmt)
    assert next(examples).line == 0
    with pytest.raises(IngestError, match=message) as info:
        next(examples)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}:2: ")


def test_read_questions_rejects_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown question format 'csv'") as info:
        read_questions(tmp_path / "x.txt", "csv")
    assert info.value.hint is not None and all(f in info.value.hint for f in FORMATS)
    with pytest.raises(IngestError, match="not found"):
        read_questions(tmp_path / "missing.txt", "metaqa")


def _examples(n: int) -> list[QAExample]:
    return [
        QAExample(qid=f"qa:{i}", question=f"q{i}", topic_ids=(), answers=("a",), line=i) for i in range(n)
    ]


def test_split_train_val_is_deterministic_and_stable_when_the_file_grows() -> None:
    train, val = split_train_val(_examples(1000), val_fraction=0.2, seed=7)
    assert (train, val) == split_train_val(_examples(1000), val_fraction=0.2, seed=7)
    assert len(train) + len(val) == 1000 and 150 < len(val) < 250
    assert [e.line for e in train] == sorted(e.line for e in train)  # input order kept
    grown_train, grown_val = split_train_val(_examples(1500), val_fraction=0.2, seed=7)
    assert {e.qid for e in grown_val if e.line < 1000} == {e.qid for e in val}
    other_val = split_train_val(_examples(1000), val_fraction=0.2, seed=8)[1]
    assert {e.qid for e in other_val} != {e.qid for e in val}
    assert split_train_val(_examples(10), val_fraction=0.0, seed=1)[1] == []
    with pytest.raises(ConfigError):
        split_train_val(_examples(10), val_fraction=1.5, seed=1)


def test_sample_is_fixed_representative_and_in_input_order() -> None:
    # A file sorted by question type, as MetaQA's dev files are: the head holds one type only.
    examples = [
        QAExample(f"q{i}", f"question {i}", ("t",), ("a",), line=i, qtype=f"type{i // 100}")
        for i in range(500)
    ]
    picked = sample(examples, 50)
    assert picked == sample(examples, 50)  # same on every run
    assert len(picked) == 50 and len({e.qid for e in picked}) == 50
    assert [e.line for e in picked] == sorted(e.line for e in picked)  # input order kept
    assert {e.qtype for e in picked} == {f"type{k}" for k in range(5)}  # not just the head
    assert set(sample(examples, 20)) <= set(sample(examples, 50))  # grows by adding
    assert sample(examples, None) == examples and sample(examples, 900) == examples
    assert sample(examples, 50, seed=1) != picked


def test_read_questions_stark_reads_json_and_python_id_lists_and_optional_columns(tmp_path: Path) -> None:
    path = tmp_path / "qa.csv"
    path.write_text(
        "id,query,answer_ids,template,metapath,text_constraint\n"
        '7,"Which genes, exactly?","[""G:1"", ""G:2""]",T7,gene* -r-> phenotype[text],a cue\n'
        '8,"A query\nover two lines","[1, 2]",,,\n'
        "9,Skipped,\"['x']\",,,\n",
        encoding="utf-8",
    )
    first, second = list(read_questions(path, "stark", limit=2))
    assert (first.qid, first.question, first.answers) == ("7", "Which genes, exactly?", ("G:1", "G:2"))
    assert (first.qtype, first.metapath) == ("T7", "gene* -r-> phenotype[text]")
    assert first.text_constraints == ("a cue",)
    assert (second.question, second.answers, second.line) == ("A query\nover two lines", ("1", "2"), 1)
    assert second.metapath == "" and second.text_constraints == ()
    assert [e.qid for e in read_questions(path, "stark", lines={2})] == ["9"]


def test_read_questions_stark_rejects_a_missing_column_and_a_bad_id_list(tmp_path: Path) -> None:
    path = tmp_path / "qa.csv"
    path.write_text("id,query\n1,q\n", encoding="utf-8")
    with pytest.raises(IngestError, match="answer_ids"):
        list(read_questions(path, "stark"))
    path.write_text('id,query,answer_ids\n1,q,"not a list"\n', encoding="utf-8")
    with pytest.raises(IngestError, match="JSON or Python list"):
        list(read_questions(path, "stark"))


def test_read_questions_refuses_a_repeated_id_with_both_lines(tmp_path: Path) -> None:
    again = ROG[0].replace("who did kim richards marry", "who directed cast away")
    path = _write(tmp_path / "qa.jsonl", [ROG[0], ROG[1], again])
    with pytest.raises(IngestError) as info:
        list(read_questions(path, "rog-jsonl"))
    message = str(info.value)
    assert message.startswith(f"{path}:3: ") and "WebQTest-12" in message and "line 1" in message
    assert info.value.hint


def test_read_questions_stark_refuses_a_repeated_id_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "qa.csv"
    path.write_text('id,query,answer_ids\n7,first,"[1]"\n8,other,"[2]"\n7,second,"[3]"\n', encoding="utf-8")
    with pytest.raises(IngestError, match=r"qa.csv:4: .*'7'.*line 2"):
        list(read_questions(path, "stark"))


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "not-gzip"])
@pytest.mark.parametrize("fmt", ["metaqa", "stark"])
def test_read_questions_refuses_a_broken_gz_file_before_any_question(
    tmp_path: Path, damage: str, fmt: str
) -> None:
    import gzip

    body = (
        "".join(f"{METAQA[0]}\n" for _ in range(2000))
        if fmt == "metaqa"
        else "id,query,answer_ids\n" + "".join(f'{i},q {i},"[1]"\n' for i in range(2000))
    ).encode()
    packed = gzip.compress(body)
    if damage == "truncated":
        packed = packed[: len(packed) // 2]
    elif damage == "corrupt":
        middle = len(packed) // 2
        flipped = bytes(b ^ 0xFF for b in packed[middle : middle + 64])
        packed = packed[:middle] + flipped + packed[middle + 64 :]
    else:
        packed = body
    path = tmp_path / "qa_train.txt.gz"
    path.write_bytes(packed)
    with pytest.raises(IngestError, match="truncated or corrupt") as info:
        next(iter(read_questions(path, fmt)))
    assert str(path) in str(info.value) and info.value.hint


def test_read_questions_names_the_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "qa.txt"
    path.write_bytes(f"{METAQA[0]}\n".encode() + b"what \xff\xfe [x]\ty\n")
    with pytest.raises(IngestError, match=r"qa.txt: .*not valid UTF-8"):
        list(read_questions(path, "metaqa"))
