"""Tests for the source-format readers in ``ingest/readers``.

SOURCE of the real-data fixtures in ``tests/fixtures`` (copied verbatim, in file order):
- ``metaqa_kb_excerpt.txt``: the first 20 lines of ``../shared/data/metaqa/kb.txt.gz`` whose head is
  "Forrest Gump" or "Cast Away" (``zcat kb.txt.gz | grep -E '^(Forrest Gump|Cast Away)\\|' | head -20``).
- ``pathquestion_kb_excerpt.tsv``: lines 1-10 of ``../shared/data/pathquestion/2H-kb.txt``.
- ``wc2014_kb_excerpt.tsv``: lines 1-10 of ``../shared/data/wc2014/WC2014.txt``.
The RoG, PrimeKG and MAG fixtures are hand-written in the exact shape of those dumps.
Bad-line inputs are built per test under ``tmp_path``.
"""

from __future__ import annotations

import gzip
import inspect
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.readers import READERS, get_reader
from ingest.readers.delimited import read_csv, read_tsv
from ingest.readers.metaqa import read_metaqa
from ingest.readers.primekg import read_primekg
from ingest.readers.rog import read_rog_jsonl
from ingest.readers.typed_csv import read_typed_csv, resolve_paths
from kgqa.errors import IngestError
from kgqa.types import BadLine, EntityRecord, SourceItem, TripleRecord

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PRIMEKG_HEADER = (
    "relation,display_relation,x_index,x_id,x_type,x_name,x_source,y_index,y_id,y_type,y_name,y_source\n"
)


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def _gzip_copy(source: Path, target: Path) -> Path:
    with source.open("rb") as raw, gzip.open(target, "wb") as packed:
        shutil.copyfileobj(raw, packed)
    return target


def _lines(items: list[SourceItem]) -> list[int]:
    return [item.line for item in items]


def _bad(items: list[SourceItem]) -> list[BadLine]:
    return [item for item in items if isinstance(item, BadLine)]


# --- metaqa -----------------------------------------------------------------------------------------


def test_read_metaqa_yields_verbatim_triples_numbered_by_line() -> None:
    items = list(read_metaqa(FIXTURES / "metaqa_kb_excerpt.txt"))

    assert len(items) == 20
    assert items[:3] == [
        TripleRecord("Forrest Gump", "has_tags", "historic", 1),
        TripleRecord("Forrest Gump", "starred_actors", "Sally Field", 2),
        TripleRecord("Cast Away", "directed_by", "Robert Zemeckis", 3),
    ]
    assert items[-1] == TripleRecord("Cast Away", "has_genre", "Adventure", 20)
    assert _lines(items) == list(range(1, 21))


def test_read_metaqa_reads_gzip_by_suffix(tmp_path: Path) -> None:
    plain = FIXTURES / "metaqa_kb_excerpt.txt"
    packed = _gzip_copy(plain, tmp_path / "kb.txt.gz")

    assert list(read_metaqa(packed)) == list(read_metaqa(plain))


def test_read_metaqa_yields_bad_line_when_field_count_is_wrong(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "kb.txt",
        "Cast Away|directed_by\nA|b|c|d\nCast Away|release_year|2000\n",
    )

    items = list(read_metaqa(source))

    assert items == [
        BadLine(1, "expected 3 '|'-separated fields, got 2: 'Cast Away|directed_by'"),
        BadLine(2, "expected 3 '|'-separated fields, got 4: 'A|b|c|d'"),
        TripleRecord("Cast Away", "release_year", "2000", 3),
    ]


def test_read_metaqa_yields_bad_line_naming_the_empty_field(tmp_path: Path) -> None:
    source = _write(tmp_path / "kb.txt", "Cast Away||Drama\n|has_genre|Drama\n")

    assert list(read_metaqa(source)) == [
        BadLine(1, "empty relation field: 'Cast Away||Drama'"),
        BadLine(2, "empty head field: '|has_genre|Drama'"),
    ]


def test_read_metaqa_skips_blank_lines_and_keeps_physical_numbers(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "kb.txt", "\nCast Away|has_genre|Drama\r\n   \n\nForrest Gump|release_year|1994"
    )

    assert list(read_metaqa(source)) == [
        TripleRecord("Cast Away", "has_genre", "Drama", 2),
        TripleRecord("Forrest Gump", "release_year", "1994", 5),
    ]


def test_read_metaqa_yields_bad_line_when_line_is_not_utf8(tmp_path: Path) -> None:
    source = _write(tmp_path / "kb.txt", b"Cast Away|has_genre|Drama\nCaf\xe9|has_genre|Drama\nA|b|c\n")

    items = list(read_metaqa(source))

    assert items == [
        TripleRecord("Cast Away", "has_genre", "Drama", 1),
        BadLine(2, "invalid UTF-8 (byte 0xe9 at character 4)"),
        TripleRecord("A", "b", "c", 3),
    ]


def test_read_metaqa_raises_ingest_error_when_file_is_missing(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="source file not found") as caught:
        read_metaqa(tmp_path / "absent.txt")

    assert caught.value.path == str(tmp_path / "absent.txt")


def test_read_metaqa_raises_before_any_item_when_gzip_is_truncated(tmp_path: Path) -> None:
    body = "".join(f"Film {i}|has_genre|Drama\n" for i in range(20_000)).encode()
    packed = gzip.compress(body)
    source = _write(tmp_path / "kb.txt.gz", packed[: len(packed) // 2])

    with pytest.raises(IngestError, match="truncated or corrupt") as caught:
        read_metaqa(source)
    assert caught.value.path == str(source) and "nothing was read" in (caught.value.hint or "")


def test_read_metaqa_raises_before_any_item_when_gzip_decompresses_to_garbage(tmp_path: Path) -> None:
    body = "".join(f"Film {i}|has_genre|Drama\n" for i in range(2_000)).encode()
    packed = bytearray(gzip.compress(body, compresslevel=0))  # stored: a flipped byte is no zlib error
    packed[len(packed) // 2] ^= 0x55
    source = _write(tmp_path / "kb.txt.gz", bytes(packed))

    with pytest.raises(IngestError, match="truncated or corrupt"):
        read_metaqa(source)


# --- tsv / csv ----------------------------------------------------------------------------------------


def test_read_tsv_yields_pathquestion_triples() -> None:
    items = list(read_tsv(FIXTURES / "pathquestion_kb_excerpt.tsv"))

    assert len(items) == 10
    assert items[0] == TripleRecord("ludwig_ii_of_bavaria", "parents", "maximilian_ii_of_bavaria", 1)
    assert items[9] == TripleRecord("pierre_curie", "children", "irene_joliot-curie", 10)


def test_read_tsv_yields_wc2014_triples_with_inverse_relations_verbatim() -> None:
    items = list(read_tsv(FIXTURES / "wc2014_kb_excerpt.tsv"))

    assert len(items) == 10
    assert items[0] == TripleRecord("Watford_FC", "plays_in_club_inverse", "Esseid_BELKALEM", 1)
    assert items[4] == TripleRecord("Rickie_LAMBERT", "is_aged", "32", 5)


def test_read_tsv_keeps_quote_inside_field_verbatim(tmp_path: Path) -> None:
    source = _write(tmp_path / "kb.txt", 'David_\\"Buck\\"_Wheat\t__people__person__profession\tSongwriter\n')

    assert list(read_tsv(source)) == [
        TripleRecord('David_\\"Buck\\"_Wheat', "__people__person__profession", "Songwriter", 1)
    ]


def test_read_tsv_yields_bad_line_when_field_count_is_wrong(tmp_path: Path) -> None:
    source = _write(tmp_path / "kb.txt", "a\tb\nx\ty\tz\na\tb\tc\td\n")

    assert list(read_tsv(source)) == [
        BadLine(1, "expected 3 tab-separated fields, got 2"),
        TripleRecord("x", "y", "z", 2),
        BadLine(3, "expected 3 tab-separated fields, got 4"),
    ]


def test_read_tsv_yields_bad_line_naming_empty_field_and_skips_blank_rows(tmp_path: Path) -> None:
    source = _write(tmp_path / "kb.txt", "a\t\tc\n\n\t\t\nx\ty\t\n")

    assert list(read_tsv(source)) == [BadLine(1, "empty relation"), BadLine(4, "empty tail")]


def test_read_tsv_yields_bad_line_when_quoting_is_broken_and_continues(tmp_path: Path) -> None:
    source = _write(tmp_path / "kb.txt", '"Weird Al" Yankovic\tgender\tmale\nx\ty\tz\n')

    items = list(read_tsv(source))

    assert items[1] == TripleRecord("x", "y", "z", 2)
    assert items[0].line == 1 and isinstance(items[0], BadLine)
    assert items[0].message.startswith("malformed CSV: ")


def test_read_tsv_uses_comma_for_csv_suffix_and_maps_header_columns(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "triples.csv",
        "source,subject,predicate,object\n"
        'wiki,"Paris, France",capital_of,France\r\n'
        "wiki,Lyon,located_in,France\n",
    )
    columns = {"head": "subject", "relation": "predicate", "tail": "object"}

    assert list(read_tsv(source, columns=columns)) == [
        TripleRecord("Paris, France", "capital_of", "France", 2),
        TripleRecord("Lyon", "located_in", "France", 3),
    ]


def test_read_tsv_reads_gzip_csv_with_default_header_names(tmp_path: Path) -> None:
    plain = _write(tmp_path / "plain.csv", "tail,head,relation\nFrance,Paris,capital_of\n")
    packed = _gzip_copy(plain, tmp_path / "triples.csv.gz")

    assert list(read_tsv(packed, header=True)) == [TripleRecord("Paris", "capital_of", "France", 2)]


def test_read_tsv_numbers_row_after_multiline_quoted_field_by_physical_line(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.csv", 'head,relation,tail\na,"two\nlines",b\nc,d,e\n')

    assert list(read_tsv(source, header=True)) == [
        TripleRecord("a", "two\nlines", "b", 2),
        TripleRecord("c", "d", "e", 4),
    ]


def test_read_tsv_yields_bad_line_when_row_width_differs_from_header(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.csv", "head,relation,tail,note\na,b,c\na,b,c,d\n")

    assert list(read_tsv(source, header=True)) == [
        BadLine(2, "expected 4 ','-separated fields as in the header, got 3"),
        TripleRecord("a", "b", "c", 3),
    ]


def test_read_tsv_bad_line_names_the_mapped_column_when_empty(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.csv", "s,p,o\na,,c\n")

    items = list(read_tsv(source, columns={"head": "s", "relation": "p", "tail": "o"}))

    assert items == [BadLine(2, "empty relation (column 'p')")]


def test_read_tsv_raises_ingest_error_when_header_lacks_mapped_column(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.csv", "subject,predicate,obj\na,b,c\n")
    items = read_tsv(source, columns={"head": "subject", "relation": "predicate", "tail": "object"})

    with pytest.raises(IngestError, match="header lacks required column 'object'") as caught:
        next(items)
    assert caught.value.line == 1


def test_read_tsv_raises_ingest_error_when_columns_given_without_header(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.csv", "a,b,c\n")

    with pytest.raises(IngestError, match="needs a header row"):
        read_tsv(source, header=False, columns={"head": "h"})


def test_read_tsv_raises_ingest_error_when_columns_key_is_unknown(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.csv", "a,b,c\n")

    with pytest.raises(IngestError, match="unknown key.*subject"):
        read_tsv(source, columns={"subject": "s"})


def test_read_tsv_raises_ingest_error_when_delimiter_is_not_one_character(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.txt", "a,b,c\n")

    with pytest.raises(IngestError, match="delimiter must be one character"):
        read_tsv(source, delimiter="::")


def test_read_tsv_accepts_escaped_tab_delimiter(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.csv", "a\tb\tc\n")

    assert list(read_tsv(source, delimiter="\\t")) == [TripleRecord("a", "b", "c", 1)]


def test_read_csv_defaults_to_comma_whatever_the_suffix(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.txt", "a,b,c\n")

    assert list(read_csv(source)) == [TripleRecord("a", "b", "c", 1)]


# --- rog-jsonl ------------------------------------------------------------------------------------------


def test_read_rog_jsonl_yields_triples_and_named_entities_first() -> None:
    items = list(read_rog_jsonl(FIXTURES / "rog_excerpt.jsonl"))

    assert items == [
        TripleRecord("Kim Richards", "people.person.spouse_s", "m.0j4k1c9", 1),
        TripleRecord("m.0j4k1c9", "people.marriage.spouse", "G. Monty Brinson", 1),
        TripleRecord("m.0j4k1c9", "people.marriage.type_of_union", "Marriage", 1),
        EntityRecord("m.05qtj", "Paris", 2),
        EntityRecord("m.0f8l9c", "France", 2),
        TripleRecord("m.05qtj", "location.location.containedby", "m.0f8l9c", 2),
        TripleRecord("m.0f8l9c", "location.country.capital", "m.05qtj", 2),
        TripleRecord("m.02j81", "location.location.containedby", "m.05qtj", 3),
        TripleRecord("g.11b6d2k6sz", "common.topic.notable_types", "m.02j81", 3),
    ]


def test_read_rog_jsonl_names_entities_from_id_to_name_objects(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "rog.jsonl",
        '{"q_entity": {"m.02mjmr": "Barack Obama"}, "topic_entity": {"m.02mjmr": "Obama"},'
        ' "graph": [["m.02mjmr", "people.person.nationality", "m.09c7w0"]]}\n',
    )

    assert list(read_rog_jsonl(source)) == [
        EntityRecord("m.02mjmr", "Obama", 1),
        TripleRecord("m.02mjmr", "people.person.nationality", "m.09c7w0", 1),
    ]


def test_read_rog_jsonl_yields_bad_line_naming_graph_entry_and_keeps_good_triples(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "rog.jsonl",
        '{"graph": [["a", "r", "b"], ["a", "r"], ["c", 7, "d"], ["e", "r", "f"]]}\n',
    )

    assert list(read_rog_jsonl(source)) == [
        TripleRecord("a", "r", "b", 1),
        TripleRecord("e", "r", "f", 1),
        BadLine(1, "graph[1]: expected a [head, relation, tail] list, got list of 2 (and 1 more problem)"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"graph": [["a", "r", "b"]', "invalid JSON: Expecting ',' delimiter (column 27)"),
        ('[["a", "r", "b"]]', "expected a JSON object, got list"),
        ('{"id": "q1", "question": "?"}', "missing field 'graph'"),
        ('{"graph": {"a": "b"}}', "graph: expected a list of [head, relation, tail] lists, got object"),
        (
            '{"graph": [], "entity_names": ["Paris"]}',
            "entity_names: expected an object mapping ids to names, got list",
        ),
        ('{"graph": [["", "r", "b"]]}', "graph[0]: head must be a non-empty string, got empty string"),
    ],
)
def test_read_rog_jsonl_yields_bad_line_naming_the_problem(tmp_path: Path, text: str, message: str) -> None:
    source = _write(tmp_path / "rog.jsonl", f'{{"graph": [["x", "r", "y"]]}}\n\n{text}\n{{"graph": []}}\n')

    items = list(read_rog_jsonl(source))

    assert items == [TripleRecord("x", "r", "y", 1), BadLine(3, message)]


# --- primekg ----------------------------------------------------------------------------------------------


def test_read_primekg_yields_entities_then_triple_from_line_two() -> None:
    items = list(read_primekg(FIXTURES / "primekg_kg_excerpt.csv"))

    assert items[:3] == [
        EntityRecord("0", "PHYHIP", 2, label="gene/protein"),
        EntityRecord("8889", "KIF15", 2, label="gene/protein"),
        TripleRecord("0", "protein_protein", "8889", 2),
    ]
    assert _lines(items) == sorted(_lines(items))
    assert [item for item in items if isinstance(item, TripleRecord)][-1] == TripleRecord(
        "63055", "anatomy_protein_present", "2176", 9
    )


def test_read_primekg_yields_each_entity_once_and_keeps_quoted_comma_names() -> None:
    items = list(read_primekg(FIXTURES / "primekg_kg_excerpt.csv"))
    entities = [item for item in items if isinstance(item, EntityRecord)]

    assert len(entities) == len({entity.id for entity in entities}) == 10
    assert EntityRecord("14012", "Lepirudin", 4, label="drug") in entities
    assert EntityRecord("27165", "hemorrhagic disorder, acquired", 6, label="disease") in entities
    assert EntityRecord("22999", "Thrombocytopenia", 7, label="effect/phenotype") in entities
    assert len([item for item in items if isinstance(item, TripleRecord)]) == 8


def test_read_primekg_repeats_entities_on_every_row_when_dedupe_is_off() -> None:
    items = list(read_primekg(FIXTURES / "primekg_kg_excerpt.csv", dedupe_entities=False))

    assert len(items) == 8 * 3
    assert items[9:12] == [
        EntityRecord("14012", "Lepirudin", 5, label="drug"),
        EntityRecord("28139", "heparin-induced thrombocytopenia", 5, label="disease"),
        TripleRecord("14012", "indication", "28139", 5),
    ]


def test_read_primekg_yields_bad_lines_for_short_rows_and_empty_index(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "kg.csv",
        PRIMEKG_HEADER
        + "protein_protein,ppi,0,9796,gene/protein,PHYHIP,NCBI\n"
        + "protein_protein,ppi,,9796,gene/protein,PHYHIP,NCBI,8889,56992,gene/protein,KIF15,NCBI\n"
        + ",ppi,0,9796,gene/protein,PHYHIP,NCBI,8889,56992,gene/protein,KIF15,NCBI\n",
    )

    assert list(read_primekg(source)) == [
        BadLine(2, "expected 12 ','-separated fields as in the header, got 7"),
        BadLine(3, "empty x_index"),
        BadLine(4, "empty relation"),
    ]


def test_read_primekg_yields_bad_line_naming_field_when_not_utf8(tmp_path: Path) -> None:
    row = b"protein_protein,ppi,0,9796,gene/protein,PHYH\xffIP,NCBI,8889,56992,gene/protein,KIF15,NCBI\n"
    source = _write(tmp_path / "kg.csv", PRIMEKG_HEADER.encode() + row)

    assert list(read_primekg(source)) == [BadLine(2, "field 6: invalid UTF-8 (byte 0xff at character 5)")]


def test_read_primekg_raises_ingest_error_naming_missing_column(tmp_path: Path) -> None:
    source = _write(tmp_path / "kg.csv", PRIMEKG_HEADER.replace("x_index", "x_idx") + "a,b,c\n")
    items = read_primekg(source)

    with pytest.raises(IngestError, match="header lacks required column 'x_index'"):
        next(items)


def test_read_primekg_raises_before_any_item_when_gzip_is_truncated(tmp_path: Path) -> None:
    row = "protein_protein,ppi,{0},9796,gene/protein,G{0},NCBI,8889,56992,gene/protein,KIF15,NCBI\n"
    packed = gzip.compress((PRIMEKG_HEADER + "".join(row.format(i) for i in range(20_000))).encode())
    source = _write(tmp_path / "kg.csv.gz", packed[: len(packed) // 2])

    with pytest.raises(IngestError, match="truncated or corrupt"):
        read_primekg(source)


# --- typed-csv --------------------------------------------------------------------------------------------


def test_read_typed_csv_yields_nodes_then_edges_numbered_across_files() -> None:
    items = list(read_typed_csv(FIXTURES / "mag_nodes.csv"))

    nodes_file_lines = 6  # header + 5 node rows; edge header is line 7, first edge row line 8
    assert items[0] == EntityRecord(
        "p1",
        "Attention Is All You Need",
        2,
        label="paper",
        text="We propose a new network architecture, the Transformer, based solely on attention mechanisms.",
    )
    assert items[1] == EntityRecord(
        "p2",
        "Deep Residual Learning for Image Recognition",
        3,
        label="paper",
        text='We present a residual learning framework to ease the training of "very deep" networks.',
    )
    assert items[2] == EntityRecord("a1", "Ashish Vaswani", 4, label="author", text=None)
    assert items[5] == TripleRecord("a1", "author___writes___paper", "p1", nodes_file_lines + 2)
    assert items[-1] == TripleRecord("p2", "paper___has_topic___field_of_study", "f1", nodes_file_lines + 6)
    assert _lines(items) == [2, 3, 4, 5, 6, 8, 9, 10, 11, 12]


def test_read_typed_csv_reads_gzip_pair_from_directory(tmp_path: Path) -> None:
    _gzip_copy(FIXTURES / "mag_nodes.csv", tmp_path / "nodes.csv.gz")
    shutil.copy(FIXTURES / "mag_edges.csv", tmp_path / "edges.csv")

    assert list(read_typed_csv(tmp_path)) == list(read_typed_csv(FIXTURES / "mag_nodes.csv"))


def test_read_typed_csv_uses_explicit_edges_file(tmp_path: Path) -> None:
    edges = _write(tmp_path / "links.csv", "src,type,dst\np1,paper___cites___paper,p2\n")

    items = list(read_typed_csv(FIXTURES / "mag_nodes.csv", edges=edges))

    assert items[-1] == TripleRecord("p1", "paper___cites___paper", "p2", 8)
    assert resolve_paths(FIXTURES / "mag_nodes.csv", edges=edges) == (FIXTURES / "mag_nodes.csv", edges)


def test_read_typed_csv_edge_bad_line_names_edges_file_and_physical_line(tmp_path: Path) -> None:
    nodes = _write(tmp_path / "nodes.csv", "id,type,name,text\np1,paper,P,\n,paper,Q,\n\n")
    _write(tmp_path / "edges.csv", "src,type,dst\np1,cites\np1,,p1\np1,cites,p1\n")

    items = list(read_typed_csv(nodes))

    assert items == [
        EntityRecord("p1", "P", 2, label="paper"),
        BadLine(3, "empty id"),
        BadLine(6, "edges.csv line 2: expected 3 ','-separated fields as in the header, got 2"),
        BadLine(7, "edges.csv line 3: empty type"),
        TripleRecord("p1", "cites", "p1", 8),
    ]


def test_read_typed_csv_raises_ingest_error_when_edges_header_lacks_column(tmp_path: Path) -> None:
    nodes = _write(tmp_path / "nodes.csv", "id,type,name\np1,paper,P\n")
    edges = _write(tmp_path / "edges.csv", "source,type,dst\np1,cites,p1\n")
    items = read_typed_csv(nodes)

    assert next(items) == EntityRecord("p1", "P", 2, label="paper")
    with pytest.raises(IngestError, match="lacks required column 'src'") as caught:
        next(items)
    assert (caught.value.path, caught.value.line) == (str(edges), 1)


def test_read_typed_csv_raises_ingest_error_when_sibling_edges_file_is_missing(tmp_path: Path) -> None:
    nodes = _write(tmp_path / "mag_nodes.csv", "id,type,name\n")

    with pytest.raises(IngestError, match="'mag_edges.csv' not found") as caught:
        read_typed_csv(nodes)
    assert "--edges PATH" in (caught.value.hint or "")


def test_read_typed_csv_raises_ingest_error_when_edges_name_cannot_be_inferred(tmp_path: Path) -> None:
    nodes = _write(tmp_path / "papers.csv", "id,type,name\n")

    with pytest.raises(IngestError, match="cannot infer the edges file") as caught:
        read_typed_csv(nodes)
    assert "--edges PATH" in (caught.value.hint or "")


def test_read_typed_csv_raises_ingest_error_when_directory_lacks_nodes(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"no nodes\.csv or nodes\.csv\.gz"):
        read_typed_csv(tmp_path)


# --- registry ---------------------------------------------------------------------------------------------


def test_get_reader_binds_options_and_reads(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.txt", "head;relation;tail\na;b;c\n")

    read = get_reader("tsv", delimiter=";", header=True)

    assert list(read(source)) == [TripleRecord("a", "b", "c", 2)]


def test_get_reader_registers_every_format() -> None:
    assert set(READERS) == {"metaqa", "tsv", "csv", "rog-jsonl", "primekg", "typed-csv"}


def test_get_reader_raises_ingest_error_listing_known_formats_when_format_is_unknown() -> None:
    with pytest.raises(IngestError, match="unknown source format 'ntriples'; known formats: csv, metaqa,"):
        get_reader("ntriples")


def test_get_reader_raises_ingest_error_when_option_is_unknown() -> None:
    with pytest.raises(IngestError, match="'metaqa' does not take option.*delimiter; it takes: no options"):
        get_reader("metaqa", delimiter=",")


@pytest.mark.parametrize(
    ("fmt", "source"),
    [
        ("metaqa", "metaqa_kb_excerpt.txt"),
        ("tsv", "pathquestion_kb_excerpt.tsv"),
        ("tsv", "wc2014_kb_excerpt.tsv"),
        ("rog-jsonl", "rog_excerpt.jsonl"),
        ("primekg", "primekg_kg_excerpt.csv"),
        ("typed-csv", "mag_nodes.csv"),
    ],
)
def test_get_reader_streams_monotone_lines_without_bad_lines_for_fixtures(fmt: str, source: str) -> None:
    items: Iterator[SourceItem] = get_reader(fmt)(FIXTURES / source)

    assert inspect.isgenerator(items)
    collected = list(items)
    assert collected and not _bad(collected)
    assert _lines(collected) == sorted(_lines(collected))


def test_read_typed_csv_node_id_repeated_with_another_type_is_a_bad_line(tmp_path: Path) -> None:
    nodes = _write(tmp_path / "nodes.csv", "id,type,name\np1,paper,P\np1,author,Q\np1,paper,P again\n")
    _write(tmp_path / "edges.csv", "src,type,dst\n")

    items = list(read_typed_csv(nodes))

    assert items == [
        EntityRecord("p1", "P", 2, label="paper"),
        BadLine(3, "node id 'p1' has type 'author' here but 'paper' on line 2"),
        EntityRecord("p1", "P again", 4, label="paper"),
    ]
