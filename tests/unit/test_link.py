"""Entity linking on the toy KG in a real kglite store, one method at a time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kgqa.embed.protocol import Embedder
from kgqa.errors import EntityNotFoundError
from kgqa.link import LinkResult, escape_lucene, link
from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.kglite_store import KgliteStore
from kgqa.store.protocol import Statement
from kgqa.types import LinkedEntity, ParsedQuestion


def _no_embedder() -> Embedder:
    raise AssertionError("the embedder must not be built unless the vector step runs")


def _counting(embedder: Embedder) -> tuple[Callable[[], Embedder], list[int]]:
    calls: list[int] = []

    def factory() -> Embedder:
        calls.append(1)
        return embedder

    return factory, calls


def _add_triples(store: KgliteStore, rel_type: str, pairs: list[tuple[str, str]]) -> None:
    rows = [{"h": h, "h_norm": normalise_name(h), "t": t, "t_norm": normalise_name(t)} for h, t in pairs]
    store.write([Statement(queries.get("ingest_triples"), {"rel_type": rel_type, "rows": rows})])


def _ids(cands: tuple[LinkedEntity, ...]) -> list[str]:
    return [c.id for c in cands]


# --- explicit topic ids -------------------------------------------------------------------------


def test_link_uses_topic_ids_when_given(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "who directed it", topic_ids=["Jaws", "Tom Hanks"])
    assert _ids(result.candidates) == ["Jaws", "Tom Hanks"]
    assert _ids(result.topics) == ["Jaws", "Tom Hanks"]
    assert {(c.score, c.method, c.mention) for c in result.candidates} == {(1.0, "topic", "")}
    assert result.candidates[1].name == "Tom Hanks"


def test_link_raises_entity_not_found_naming_missing_topic_ids(toy_kg: KgliteStore) -> None:
    with pytest.raises(EntityNotFoundError, match="'Nobody'") as info:
        link(toy_kg, _no_embedder, "who directed Jaws", topic_ids=["Jaws", "Nobody"])
    assert "'Jaws'" not in str(info.value)


def test_topic_and_bracket_linking_read_names_not_embeddings(
    toy_kg: KgliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29 major 6: linking needs ids and names only; over Bolt an embedding is 3.4 KB."""
    run = toy_kg.run
    columns: list[tuple[str, ...]] = []

    def recording(query: queries.Query, params: object = None) -> list[dict[str, object]]:
        rows = run(query, params)  # type: ignore[arg-type]
        columns.extend(tuple(r) for r in rows)
        return rows

    monkeypatch.setattr(toy_kg, "run", recording)
    link(toy_kg, _no_embedder, "who directed it", topic_ids=["Jaws"])
    link(toy_kg, _no_embedder, "who directed [Jaws]")
    assert columns and not any("embedding" in c for c in columns)


# --- brackets ------------------------------------------------------------------------------------


def test_link_matches_bracketed_span_by_id(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "what movies did [Tom Hanks] act in")
    assert result.candidates == (LinkedEntity("Tom Hanks", "Tom Hanks", 1.0, "Tom Hanks", "bracket"),)


def test_link_matches_bracketed_span_by_normalised_name(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "who directed [the terminal] and [JAWS]")
    assert _ids(result.topics) == ["The Terminal", "Jaws"]
    assert [c.mention for c in result.topics] == ["the terminal", "JAWS"]
    assert {c.method for c in result.candidates} == {"bracket"}


def test_link_raises_entity_not_found_naming_unmatched_bracket(toy_kg: KgliteStore) -> None:
    with pytest.raises(EntityNotFoundError, match="'Nobody Known'"):
        link(toy_kg, _no_embedder, "what did [Nobody Known] direct besides [Jaws]")


# --- exact n-grams -------------------------------------------------------------------------------


def test_link_exact_finds_lower_case_name(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "what movies did tom hanks star in")
    assert result.topics[0] == LinkedEntity("Tom Hanks", "Tom Hanks", 0.95, "tom hanks", "exact")
    assert result.method == "exact"


def test_link_exact_keeps_every_non_overlapping_mention(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "who directed cast away and forrest gump?")
    assert _ids(result.topics) == ["Forrest Gump", "Cast Away"]  # longer mention first
    assert [c.mention for c in result.topics] == ["forrest gump", "cast away"]


def test_link_takes_one_topic_per_mention_and_no_partial_name_beside_a_whole_one(toy_kg: KgliteStore) -> None:
    _add_triples(toy_kg, "RELEASE_YEAR", [("Cast Away Again", "2010"), ("Come Out and Play", "2012")])
    result = link(toy_kg, _no_embedder, "when was cast away released")
    assert "Cast Away Again" in _ids(result.candidates)  # a partial name of the same words...
    assert _ids(result.topics) == ["Cast Away"]  # ...is no second topic
    result = link(toy_kg, _no_embedder, "what year did cast away come out")
    assert _ids(result.topics) == ["Cast Away"]  # "come out" of Come Out and Play: no topic either
    # Beside a one-word title too: "out" is a particle, so "come out" is one word, not a name.
    assert _ids(link(toy_kg, _no_embedder, "what year did jaws come out").topics) == ["Jaws"]


def test_link_exact_prefers_the_longest_span_over_overlapping_shorter_ones(toy_kg: KgliteStore) -> None:
    _add_triples(toy_kg, "HAS_TAGS", [("Cast Away", "away"), ("Cast Away", "cast")])
    result = link(toy_kg, _no_embedder, "who directed cast away")
    assert _ids(result.candidates) == ["Cast Away"]


def test_a_lone_tag_that_is_a_surname_competes_with_the_people_who_bear_it(toy_kg: KgliteStore) -> None:
    # MetaQA tags films "spielberg" and "kubrick": "which films did spielberg direct" means the man
    _add_triples(toy_kg, "HAS_TAGS", [("Jaws", "spielberg")])
    result = link(toy_kg, _no_embedder, "which films did spielberg direct")
    assert _ids(result.topics) == ["spielberg"]  # the exact name still leads
    assert _ids(result.contenders()) == ["spielberg", "Steven Spielberg"]  # the retriever weighs both
    assert {c.mention for c in result.contenders()} == {"spielberg"}
    cased = link(toy_kg, _no_embedder, "which films did Spielberg direct")  # capitals name a person too
    assert _ids(cased.contenders()) == ["spielberg", "Steven Spielberg"]
    # beside a film of that one-word name, the word names the film: no bearers
    _add_triples(toy_kg, "HAS_TAGS", [("Forrest Gump", "circus")])
    _add_triples(toy_kg, "STARRED_ACTORS", [("Circus", "Tim Roth"), ("Battle Circus", "June Allyson")])
    circus = link(toy_kg, _no_embedder, "who starred in circus")
    assert "Battle Circus" not in _ids(circus.contenders())
    # but a bearer far better known than the one-word name competes: the man, not the film
    _add_triples(toy_kg, "HAS_TAGS", [("Jaws", "hitchcock")])
    _add_triples(toy_kg, "STARRED_ACTORS", [("Hitchcock", "Anthony Hopkins")])
    films = [("Psycho", "Alfred Hitchcock"), ("Vertigo", "Alfred Hitchcock"), ("Rope", "Alfred Hitchcock")]
    _add_triples(toy_kg, "DIRECTED_BY", films)
    assert "Alfred Hitchcock" not in _ids(link(toy_kg, _no_embedder, "films by hitchcock").contenders())
    _add_triples(toy_kg, "DIRECTED_BY", [(film, "Alfred Hitchcock") for film in ("The Birds", "Notorious")])
    hitchcock = link(toy_kg, _no_embedder, "films by hitchcock")
    assert set(_ids(hitchcock.contenders())) == {"hitchcock", "Hitchcock", "Alfred Hitchcock"}
    # a tag nobody bears as a surname has no such contender
    _add_triples(toy_kg, "HAS_TAGS", [("Jaws", "shark")])
    assert _ids(link(toy_kg, _no_embedder, "which films are about shark").contenders()) == ["shark"]


def test_link_exact_prefers_case_sensitive_name_over_lower_case_tag(toy_kg: KgliteStore) -> None:
    _add_triples(toy_kg, "HAS_TAGS", [("Cast Away", "tom hanks")])
    cased = link(toy_kg, _no_embedder, "what movies did Tom Hanks star in")
    assert _ids(cased.candidates) == ["Tom Hanks", "tom hanks"]
    mixed = link(toy_kg, _no_embedder, "what Movies are about tom hanks")
    assert _ids(mixed.candidates) == ["tom hanks", "Tom Hanks"]  # the question writes names as they are
    lower = link(toy_kg, _no_embedder, "what movies are about tom hanks")
    assert _ids(lower.candidates) == ["Tom Hanks", "tom hanks"]  # no case cue: the proper name first
    assert len(lower.topics) == 1  # both share one mention
    assert _ids(lower.contenders()) == ["Tom Hanks", "tom hanks"]  # the retriever weighs them by fit
    assert _ids(cased.contenders()) == ["Tom Hanks"]  # the question's capitals already decide


def test_link_exact_drops_lower_case_words_when_names_are_capitalised(toy_kg: KgliteStore) -> None:
    _add_triples(toy_kg, "HAS_TAGS", [("Jaws", "films"), ("Jaws", "director")])
    result = link(toy_kg, _no_embedder, "which films share the director of Jaws")
    assert _ids(result.topics) == ["Jaws"]
    uncased = link(toy_kg, _no_embedder, "which films share the director of jaws")
    assert _ids(uncased.topics) == ["Jaws"]  # lone words only: the KB's proper name wins
    assert _ids(uncased.contenders()) == ["Jaws"]  # other mentions never compete with it


def test_link_keeps_a_whole_name_left_in_lower_case_beside_a_capitalised_one(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "which films did Tom Hanks and robert zemeckis make")
    assert _ids(result.topics) == ["Tom Hanks", "Robert Zemeckis"]
    lone = link(toy_kg, _no_embedder, "which films did Tom Hanks make with the director of jaws")
    assert _ids(lone.topics) == ["Tom Hanks"]  # a lone lower-case word is still no mention


def test_link_lower_case_article_decides_between_titles_before_popularity(toy_kg: KgliteStore) -> None:
    _add_triples(
        toy_kg, "DIRECTED_BY", [("Animal Kingdom", "David Michôd"), ("The Animal Kingdom", "Edward Griffith")]
    )
    _add_triples(toy_kg, "HAS_GENRE", [("Animal Kingdom", "Crime"), ("Animal Kingdom", "Drama")])
    assert _ids(link(toy_kg, _no_embedder, "who directed animal kingdom").topics) == ["Animal Kingdom"]
    with_article = link(toy_kg, _no_embedder, "who directed the animal kingdom")
    assert _ids(with_article.topics) == ["The Animal Kingdom"]  # not the better connected twin


def test_link_exact_matches_numbers_and_skips_stop_words(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "what was released in 1994")
    assert _ids(result.candidates) == ["1994"]


def test_link_exact_mention_drops_edge_punctuation_and_lower_case_article(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "who starred in the Terminal?")
    assert result.topics[0].id == "The Terminal"
    assert result.topics[0].mention == "Terminal"


# --- full-text -----------------------------------------------------------------------------------


def test_link_falls_back_to_fulltext_on_a_partial_name(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, "which films are by spielberg")
    assert result.method == "fulltext"
    top = result.topics[0]
    # A partial name of a question without capitals scores by the share of the name it covers
    # (kgqa.linking_words.partial_name_quality), below an exact match.
    assert top.id == "Steven Spielberg" and 0 < top.score < 0.95
    assert all(0 < c.score <= 0.9 for c in result.candidates)
    assert len(result.topics) == 1


def test_link_fulltext_survives_lucene_syntax_in_the_question(toy_kg: KgliteStore) -> None:
    result = link(toy_kg, _no_embedder, 'zemeckis: "films" (all) +drama* AND/OR ~x^2 [sic')
    assert result.topics[0].id == "Robert Zemeckis"


def test_escape_lucene_escapes_every_special_character() -> None:
    assert escape_lucene('AC/DC: "Live"!') == 'AC\\/DC\\: \\"Live\\"\\!'
    assert escape_lucene("a+b-c&&d||e(f)g{h}i[j]k^l~m*n?o\\p") == (
        "a\\+b\\-c\\&\\&d\\|\\|e\\(f\\)g\\{h\\}i\\[j\\]k\\^l\\~m\\*n\\?o\\\\p"
    )
    assert escape_lucene("plain words 1994") == "plain words 1994"


# --- vector ---------------------------------------------------------------------------------------


def _describe_jaws(store: KgliteStore, embedder: Embedder) -> None:
    """Give Jaws a description: embedded with its name, absent from the full-text (name) index."""
    from ingest.embedding import embed_store

    rows = [{"id": "Jaws", "name": "Jaws", "name_norm": "jaws", "text": "shark attacks beach town swimmers"}]
    store.write([Statement(queries.get("ingest_entities"), {"rows": rows})])
    embed_store(store, embedder)


def test_link_falls_back_to_vector_when_no_name_matches(toy_kg: KgliteStore, fake_embedder: Embedder) -> None:
    _describe_jaws(toy_kg, fake_embedder)
    factory, calls = _counting(fake_embedder)
    result = link(toy_kg, factory, "shark attacks swimmers near beach town", k=3)
    assert calls == [1]
    assert result.method == "vector"
    assert result.topics[0].id == "Jaws"
    assert len(result.candidates) <= 3
    assert all(0 < c.score <= 0.9 for c in result.candidates)
    assert result.candidates[0].mention == "shark attacks swimmers near beach town"


def test_link_accepts_an_embedder_instance(toy_kg: KgliteStore, fake_embedder: Embedder) -> None:
    _describe_jaws(toy_kg, fake_embedder)
    result = link(toy_kg, fake_embedder, "shark attacks swimmers near beach town")
    assert result.topics[0].id == "Jaws"


def test_link_never_builds_the_embedder_before_the_vector_step(toy_kg: KgliteStore) -> None:
    for question in ("who directed [Jaws]", "who directed jaws", "films by spielberg"):
        assert link(toy_kg, _no_embedder, question).candidates


# --- nothing --------------------------------------------------------------------------------------


def test_link_raises_entity_not_found_when_no_match(toy_kg: KgliteStore, fake_embedder: Embedder) -> None:
    factory, calls = _counting(fake_embedder)
    with pytest.raises(EntityNotFoundError, match="what is the") as info:
        link(toy_kg, factory, "what is the?")
    assert calls == []  # no content word: the model is not even loaded
    assert info.value.hint is not None and "--topic" in info.value.hint
    with pytest.raises(EntityNotFoundError):
        link(toy_kg, factory, "quantum chromodynamics", min_vector_score=1.01)


def test_link_says_so_when_the_question_has_no_words(toy_kg: KgliteStore, fake_embedder: Embedder) -> None:
    for question in ("", "   ", "???"):
        with pytest.raises(EntityNotFoundError, match="has no words to link"):
            link(toy_kg, fake_embedder, question)


# --- helpers and result ---------------------------------------------------------------------------


def test_parsed_question_follows_the_metaqa_bracket_convention() -> None:
    question = "the films that share actors with the film [Black Snake Moan] were in which genres"
    parsed = ParsedQuestion.parse(question)
    assert parsed.bracketed == ("Black Snake Moan",) and parsed.asked == question
    assert parsed.text == question.replace("[", "").replace("]", "")
    assert ParsedQuestion.parse("no brackets").bracketed == ()
    assert ParsedQuestion.parse("a  [b]  c [ ]").text == "a b c" and ParsedQuestion.parse(
        "[ x ]"
    ).bracketed == ("x",)


def test_link_reads_the_brackets_of_a_question_parsed_once(
    toy_kg: KgliteStore, fake_embedder: Embedder
) -> None:
    parsed = ParsedQuestion.parse("who directed [Cast Away]")
    assert link(toy_kg, fake_embedder, parsed).topics == link(toy_kg, fake_embedder, parsed.asked).topics


def test_link_result_to_dict_lists_candidates_and_topics() -> None:
    cands = (
        LinkedEntity("Tom Hanks", "Tom Hanks", 0.95, "Tom Hanks", "exact"),
        LinkedEntity("tom hanks", "tom hanks", 0.95, "Tom Hanks", "exact"),
        LinkedEntity("Jaws", "Jaws", 0.95, "Jaws", "exact"),
    )
    data = LinkResult(cands).to_dict()
    assert data["topics"] == ["Tom Hanks", "Jaws"]
    assert data["candidates"][1] == {
        "id": "tom hanks",
        "name": "tom hanks",
        "score": 0.95,
        "mention": "Tom Hanks",
        "method": "exact",
    }
    assert data["schema_version"] >= 1
    assert LinkResult(()).topics == () and LinkResult(()).method == ""
