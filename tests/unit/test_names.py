"""kgqa.names.label_name: a data type never becomes one of kgqa's own labels."""

from __future__ import annotations

import pytest

from kgqa.names import label_name, relation_text


@pytest.mark.parametrize(
    ("type_name", "label"),
    [
        ("gene/protein", "GeneProtein"),
        ("question", "Question"),  # kgqa's saved questions are :KgqaQuestion, so this is the user's
        ("kgqa question", "TKgqaQuestion"),
        ("kgqa_meta", "TKgqa_meta"),
        ("entity", "TEntity"),
        ("relation type", "TRelationType"),
        ("3d structure", "T3dStructure"),
    ],
)
def test_label_name_keeps_data_types_off_kgqa_labels(type_name: str, label: str) -> None:
    assert label_name(type_name) == label


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("location.country.languages_spoken", "country languages spoken"),
        ("people.person.nationality", "person nationality"),
        ("directed_by", "directed by"),
        ("film.film", "film film"),  # two parts: no domain to drop
        ("plays_in_club_inverse", "plays in club inverse"),
    ],
)
def test_relation_text_reads_a_dotted_freebase_name_without_its_domain(name: str, text: str) -> None:
    assert relation_text(name) == text
