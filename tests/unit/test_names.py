"""kgqa.names.label_name: a data type never becomes one of kgqa's own labels."""

from __future__ import annotations

import pytest

from kgqa.names import label_name


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
