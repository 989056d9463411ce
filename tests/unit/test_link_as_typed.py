"""Linking questions as people type them, on the bundled MetaQA slice (real names and tags).

Each case is a failure seen with the earlier linker: an exact tag beating a typo'd or lower-cased
name, common nouns taken as topics, the tag twin of a person chosen for a lower-case name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from kb_excerpts import FIXTURES, load_excerpt

from ingest.embedding import embed_store
from ingest.loader import load
from ingest.readers.metaqa import read_metaqa
from kgqa.embed.protocol import Embedder
from kgqa.link import link
from kgqa.store.kglite_store import KgliteStore

SLICE = Path(__file__).resolve().parents[2] / "examples" / "metaqa_movies" / "kb.txt"


@pytest.fixture(scope="module")
def movies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KgliteStore]:
    """The bundled slice, loaded and indexed (hashed embeddings: linking by name never reads them)."""
    with KgliteStore(tmp_path_factory.mktemp("slice") / "graph.kgl") as store:
        load(store, read_metaqa(SLICE), source=str(SLICE), fmt="metaqa", source_key="slice")
        embed_store(store, FakeEmbedder())
        yield store


def _no_embedder() -> Embedder:
    raise AssertionError("names must link without the vector step")


def _topic(store: KgliteStore, question: str) -> str:
    return link(store, _no_embedder, question).topics[0].id


@pytest.mark.parametrize(
    ("question", "gold"),
    [
        ("what genre is forest gump", "Forrest Gump"),  # not the exact tag 'forest'
        ("what movies did tom hank star in", "Tom Hanks"),  # a partial last word
        ("which films did robert zemekis direct", "Robert Zemeckis"),  # a deletion
        ("which films did robert zmeeckis direct", "Robert Zemeckis"),  # a transposition
        ("what films did harrisson ford star in", "Harrison Ford"),  # a duplication
        ("who directed the movies written by ridley scoot", "Ridley Scott"),  # a substitution
        ("WHAT MOVIES DID MEG RYAN STAR IN", "Meg Ryan"),  # all capitals
        ("who directed charlie wilsons war", "Charlie Wilson's War"),  # no apostrophe
        ("what films did dan obannon write", "Dan O'Bannon"),  # no apostrophe, words joined
    ],
)
def test_link_survives_case_and_one_typo(movies: KgliteStore, question: str, gold: str) -> None:
    assert _topic(movies, question) == gold


def test_link_prefers_the_person_to_its_tag_twin_in_a_lower_case_question(movies: KgliteStore) -> None:
    result = link(movies, _no_embedder, "which films did robert zemeckis direct")
    assert [c.id for c in result.contenders()] == ["Robert Zemeckis", "robert zemeckis"]
    assert result.topics[0].id == "Robert Zemeckis"


def test_link_never_takes_a_common_noun_when_a_name_is_present(movies: KgliteStore) -> None:
    for question in (
        "who is listed as director of tom hanks acted films",
        "which actors starred in the films directed by ridley scott",
        "what is the genre of the films starring sigourney weaver",
    ):
        topics = [t.id for t in link(movies, _no_embedder, question).topics]
        assert topics and all(t[0].isupper() for t in topics), (question, topics)


def test_link_keeps_a_lone_name_when_it_is_all_the_question_has(movies: KgliteStore) -> None:
    assert _topic(movies, "what genre is contact") == "Contact"
    assert _topic(movies, "which movies are about japan") == "japan"


def test_link_still_reaches_a_partial_name_through_full_text(movies: KgliteStore) -> None:
    assert _topic(movies, "which films are by zemeckis") in {"Robert Zemeckis", "robert zemeckis"}


@pytest.mark.slow
def test_link_refuses_gibberish_that_only_the_vector_step_could_place(tmp_path: Path) -> None:
    """With the real MiniLM, "zzzxqv qqqq" sits within cos 0.59 of some short name: no topic."""
    from kgqa.config import EmbedderSettings
    from kgqa.embed import make_embedder
    from kgqa.errors import EntityNotFoundError

    with KgliteStore(tmp_path / "graph.kgl") as store:
        load(store, read_metaqa(SLICE), source=str(SLICE), fmt="metaqa", source_key="slice")
        embedder = make_embedder(EmbedderSettings())
        embed_store(store, embedder)
        with pytest.raises(EntityNotFoundError, match="well enough"):
            link(store, embedder, "zzzxqv qqqq")
        assert link(store, embedder, "what genre is forest gump").topics[0].id == "Forrest Gump"


@pytest.fixture(scope="module")
def squads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KgliteStore]:
    """Ten WorldCup2014 facts (``tests/fixtures/wc2014_two_topics.tsv``, cut from WC2014.txt): two
    Tigres UANL players from Mexico, a forward of FC Barcelona listed for Spain."""
    with KgliteStore(tmp_path_factory.mktemp("squads") / "graph.kgl") as store:
        yield load_excerpt(store, FIXTURES / "wc2014_two_topics.tsv", FakeEmbedder())


@pytest.mark.parametrize(
    ("question", "topics"),
    [
        # a named mention and a lone lower-case word the graph ties to it (two players share them)
        ("which player in tigres uanl is from mexico", {"Tigres_UANL", "Mexico"}),
        # lone words only: each a name, tied by Alan Pulido
        ("name a player who plays at forward from mexico", {"Forward", "Mexico"}),
        # a capitalised question with a position in lower case
        ("who plays forward for FC Barcelona", {"FC_Barcelona", "Forward"}),
        # nothing in the graph ties Spain to Tigres UANL: a word, not a second topic
        ("which player in tigres uanl is from spain", {"Tigres_UANL"}),
        # a name between "which" and the noun it qualifies is a topic too
        ("which mexico footballer plays for the club tigres uanl", {"Tigres_UANL", "Mexico"}),
    ],
)
def test_a_lone_lower_case_name_the_graph_ties_to_the_topic_is_a_second_topic(
    squads: KgliteStore, question: str, topics: set[str]
) -> None:
    assert {t.id for t in link(squads, _no_embedder, question).topics} == topics


@pytest.fixture(scope="module")
def cuba(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KgliteStore]:
    """MetaQA's facts of the film Cuba, the films tagged "cuba" and The Social Network, tagged
    "director" (``tests/fixtures/metaqa_relation_word_forms.tsv``, cut from kb.txt.gz)."""
    with KgliteStore(tmp_path_factory.mktemp("cuba") / "graph.kgl") as store:
        yield load_excerpt(store, FIXTURES / "metaqa_relation_word_forms.tsv", FakeEmbedder())


def test_link_reads_another_form_of_a_relation_word_as_no_topic(cuba: KgliteStore) -> None:
    # "director" is a tag by its whole name and longer than "cuba", but a form of directed_by:
    # the question is about Cuba (the film, or the tag of the same name, which the fit decides)
    question = "what types are the films directed by the director of cuba"
    assert link(cuba, _no_embedder, question).topics[0].id in {"Cuba", "cuba"}


@pytest.fixture(scope="module")
def titles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KgliteStore]:
    """MetaQA's facts of War, The War, Help! and The Help, some of Movie 43 and of the films
    tagged "world war ii" (``tests/fixtures/metaqa_titles_and_tags.tsv``, cut from kb.txt.gz)."""
    with KgliteStore(tmp_path_factory.mktemp("titles") / "graph.kgl") as store:
        yield load_excerpt(store, FIXTURES / "metaqa_titles_and_tags.tsv", FakeEmbedder())


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        # the article fits The War whole, before War and the better connected tag "world war ii"
        ("what was the release year of the movie the war", "The War"),
        # no article: the title that has none; "The Help" is no typo of "help"
        ("who starred in help!", "Help!"),
    ],
)
def test_link_takes_the_title_the_article_fits_over_other_readings_of_the_word(
    titles: KgliteStore, question: str, topic: str
) -> None:
    assert link(titles, _no_embedder, question).topics[0].id == topic
