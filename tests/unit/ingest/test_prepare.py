"""``kgqa prepare`` pages the names it normalises by id (issue 29 minor): each page starts after
the last id of the one before, so a run reads the label once, not once per page from the start."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ingest.prepare import prepare_store
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.queries import Query
from tests.mapped_graph import MAPPING, USER_GRAPH


class RecordingStore(KgliteStore):
    """The embedded store, recording the parameters of each ``prepare_pending_names`` page."""

    pages: list[dict[str, Any]]

    def run(self, query: Query, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        rows = super().run(query, params)
        if query.name == "prepare_pending_names":
            self.pages.append({"after": dict(params or {})["after"], "ids": [r["id"] for r in rows]})
        return rows


def test_names_are_paged_by_id_each_page_after_the_last(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "user.kgl", mapping=MAPPING)
    store.pages = []
    store.graph.cypher(USER_GRAPH)
    report = prepare_store(store, page_size=3)
    assert report.names_normalised == 4
    pages = store.pages
    assert [p["ids"] for p in pages] == [["m1", "m2", "p1"], ["p2"], []]
    assert [p["after"] for p in pages] == ["", "p1", "p2"]  # never from the start again
    rows = store.graph.cypher("MATCH (n:`Film Thing`) RETURN n.uid AS id, n.kgqa_name_norm AS norm").to_list()
    assert all(r["norm"] for r in rows)
