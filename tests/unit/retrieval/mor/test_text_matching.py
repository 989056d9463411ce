"""MoR's text helpers: description cues learnt from gold spans, word overlap, alias matching."""

from __future__ import annotations

import pytest

from kgqa.retrieval.mor.planner import learn_cues
from kgqa.retrieval.mor.traversal import alias_match, lexical_overlap

TRAIN = [
    (
        'Which genes are linked to pain and to the feature defined as "reduced hand strength"?',
        "reduced hand strength",
    ),
    (
        'Which genes are linked to fever and to the feature defined as "a high temperature"?',
        "a high temperature",
    ),
    (
        "Find diseases with a finding marked by short fingers that are also seen in Marfan syndrome.",
        "short fingers",
    ),
    (
        "Find diseases with a finding marked by a small jaw that are also seen in Apert syndrome.",
        "a small jaw",
    ),
]


def test_learnt_cues_find_quoted_and_unquoted_descriptions() -> None:
    cues = learn_cues(TRAIN)
    assert cues.left['defined as "'] == 1.0
    assert cues.span(
        'Which genes are linked to cough and to the feature defined as "dry skin, or scales"?'
    ) == ("dry skin, or scales")
    assert cues.span(
        "Find diseases with a finding marked by long toes that are also seen in X syndrome."
    ) == ("long toes")
    assert cues.span("Who directed Jaws?") is None


def test_a_quote_alone_opens_a_description_after_words_never_seen_before_one() -> None:
    cues = learn_cues(TRAIN)
    assert cues.left['"'] == pytest.approx(0.5)  # two quoted spans, four quotes
    assert cues.span('Which genes go with the finding summed up as "a high temperature"?') == (
        "a high temperature"
    )
    # a seen cue wins over the quote alone
    assert cues.span('Find diseases with a finding marked by short toes and "x"') == 'short toes and "x"'


def test_lexical_overlap_is_the_share_of_span_words_in_the_text() -> None:
    assert (
        lexical_overlap("reduced volume of the earlobe", "Reduced volume of the earlobe. Synonyms: x.") == 1.0
    )
    assert lexical_overlap(
        "reduced volume of the earlobe", "Increased volume of the earlobe."
    ) == pytest.approx(2 / 3)
    assert lexical_overlap("of the", "anything") == 0.0


def test_alias_match_takes_the_best_of_name_and_short_text_segments() -> None:
    question = "Which diseases present with hearing loss and a finding marked by ..."
    text = "A decreased magnitude of the sensory perception of sound. Synonyms: Hearing loss; Deafness."
    assert alias_match(question, "Hearing impairment", text) == (1.0, 2)  # by its synonym
    share, words = alias_match(question, "Conductive hearing impairment", "")
    assert (share, words) == (pytest.approx(1 / 3), 1)
    assert alias_match(question, "Seizure", None) == (0.0, 0)


def test_alias_match_prefers_the_longer_whole_alias() -> None:
    question = "Which diseases present with increased lactate in body and also with ..."
    long_alias = alias_match(
        question, "Lactic acidosis", "Buildup of lactic acid. Synonyms: Increased lactate in body."
    )
    one_word = alias_match(
        question, "Elevated lactate:pyruvate ratio", "A ratio. The lactate: pyruvate ratio."
    )
    assert long_alias == (1.0, 3) and one_word == (1.0, 1) and long_alias > one_word


def test_frame_words_are_the_phrasing_shared_by_questions_not_their_names() -> None:
    cues = learn_cues(TRAIN)
    assert {"genes", "linked", "feature", "defined", "diseases", "finding", "marked"} <= cues.frame
    assert not {"pain", "fever", "marfan", "apert"} & cues.frame  # each named once in four questions
    assert cues.unframed("Which genes are linked to pain and to the feature defined as") == "pain"


@pytest.mark.parametrize(
    ("span", "mentions", "kept"),
    [
        # "both <name> and <description>": the longer conjunct is the description
        (
            "both fluid around lungs and anteriorly-facing nostrils seen from the front",
            [],
            "anteriorly-facing nostrils seen from the front",
        ),
        (
            "both a long-winded description of a finding and pain",
            [],
            "a long-winded description of a finding",
        ),
        # a linked mention opening the span ends at the "and" after it, whatever the lengths
        ("both Hearing and balance loss and a small jaw", ["Hearing and balance loss"], "a small jaw"),
        ("pain and a small jaw", ["pain"], "a small jaw"),
        # no coordination: unchanged ("both" inside a description, no "and" after it)
        ("abnormal smallness of one or both eyes", [], "abnormal smallness of one or both eyes"),
        ("both eyes", [], "both eyes"),
    ],
)
def test_a_coordinated_span_keeps_one_conjunct(span: str, mentions: list[str], kept: str) -> None:
    from kgqa.retrieval.mor.retriever import _uncoordinated

    assert _uncoordinated(span, mentions) == kept
