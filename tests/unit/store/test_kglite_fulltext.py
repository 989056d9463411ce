"""Fuzzy full-text on the embedded store: Lucene's ``term~N`` served in process."""

from __future__ import annotations

from typing import Any

from rapidfuzz.distance import OSA

from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.kglite_fulltext import FuzzyNameIndex, is_fuzzy, parse_terms
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.protocol import Statement


def _search(store: KgliteStore, query: str, limit: int = 10) -> list[str]:
    return [r["id"] for r in store.run(queries.get("link_fulltext"), {"query": query, "limit": limit})]


def test_parse_terms_reads_fuzzy_budgets_escapes_and_operators() -> None:
    assert parse_terms("stuatr~1 beattie") == [("stuatr", 1), ("beattie", 0)]
    assert parse_terms("gump~ AND forrest~2") == [("gump", 2), ("forrest", 2)]
    assert parse_terms("AC\\/DC~1") == [("ac", 1), ("dc", 1)]
    assert is_fuzzy("tom hank~1") and not is_fuzzy("tom hanks") and not is_fuzzy("a\\~b")


def test_fuzzy_query_finds_a_typo_that_the_native_index_misses(toy_kg: KgliteStore) -> None:
    assert "Steven Spielberg" not in _search(toy_kg, "spielbreg")  # kglite's own index: literal
    assert _search(toy_kg, "spielbreg~1")[0] == "Steven Spielberg"  # transposition = one edit
    assert _search(toy_kg, "zemekis~1 robert")[0] == "Robert Zemeckis"
    assert _search(toy_kg, "spielbreg~0") == []  # no edits allowed: nothing
    assert _search(toy_kg, "spilbreg~2")[0] == "Steven Spielberg"  # two edits: a deletion, a swap
    assert _search(toy_kg, "spilbreg~1") == []


def test_fuzzy_query_ranks_names_matching_more_terms_first_and_honours_limit(toy_kg: KgliteStore) -> None:
    rows = [("Cast Away", "tom hanks"), ("Jaws", "tom")]
    store_rows = [{"h": h, "h_norm": normalise_name(h), "t": t, "t_norm": normalise_name(t)} for h, t in rows]
    toy_kg.write([Statement(queries.get("ingest_triples"), {"rel_type": "HAS_TAGS", "rows": store_rows})])
    found = _search(toy_kg, "tom~1 hank~1")
    assert set(found[:2]) == {"Tom Hanks", "tom hanks"} and "tom" in found[2:]
    assert len(_search(toy_kg, "tom~1 hank~1", limit=1)) == 1


def test_fuzzy_index_sees_writes_made_after_it_was_loaded(toy_kg: KgliteStore) -> None:
    assert _search(toy_kg, "spielbreg~1")
    rows = [{"h": "Duel", "h_norm": "duel", "t": "Dennis Weaver", "t_norm": "dennis weaver"}]
    toy_kg.write([Statement(queries.get("ingest_triples"), {"rel_type": "STARRED_ACTORS", "rows": rows})])
    assert _search(toy_kg, "weever~1") == ["Dennis Weaver"]


def test_one_edit_finds_exactly_the_index_words_within_one_osa_edit() -> None:
    names = [
        "robert zemeckis",
        "steven spielberg",
        "tom hanks",
        "tom banks",
        "thanks",
        "hans",
        "ab",
        "a",
        "ba",
        "abc",
        "b2",
        "forrest gump",
        "forest",
        "2001 a space odyssey",
    ]
    rows = [{"eid": str(i), "norm": normalise_name(n)} for i, n in enumerate(names)]

    def read(*_: Any) -> list[dict[str, Any]]:
        return rows

    index = FuzzyNameIndex(read, "Entity")
    index.search("warm up", 1)  # loads the index
    words = {word for row in rows for word in row["norm"].split()}
    for term in ["hanks", "zemekis", "spielbreg", "forrest", "ab", "ba", "b", "2002", "odysey", "xyz"]:
        expected = {(word, int(OSA.distance(term, word))) for word in words if OSA.distance(term, word) <= 1}
        assert set(index._matches(term, 1)) == expected, term
