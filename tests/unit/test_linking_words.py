"""People's words for entities (kgqa.linking_words and its use by kgqa.link), on an excerpt of the
WebQSP-evidence KB (``tests/fixtures/webqsp_evidence_kb_excerpt.tsv``: 30 lines of
``../shared/data/webqsp_evidence/kb.tsv.gz`` about Jamaica, Benjamin Franklin, Tupac Shakur,
Egypt, Peru, Brazil, Christchurch, New Zealand, William Howard Taft, William Cabell Rives, the
Afrikaans language, a speech of Martin Luther King, Jr. and the entities "Speak", "Language",
"Tupac" and "The People Speak")."""

from __future__ import annotations

import pytest

from kgqa.embed.protocol import Embedder
from kgqa.link import link
from kgqa.linking_words import (
    RelationWords,
    demonym_stem,
    is_acronym_of,
    is_demonym_of,
    partial_name_quality,
    strip_possessive,
)
from kgqa.store.kglite_store import KgliteStore
from tests.kb_excerpts import FIXTURES, load_excerpt

EXCERPT = FIXTURES / "webqsp_evidence_kb_excerpt.tsv"


@pytest.fixture
def wqsp_kg(kglite_store: KgliteStore, fake_embedder: Embedder) -> KgliteStore:
    return load_excerpt(kglite_store, EXCERPT, fake_embedder)


def test_relation_words_split_relation_names_and_skip_entity_names() -> None:
    words = RelationWords.from_names(
        ["location.country.languages_spoken", "ACTED_IN", "1st Duke of Richmond,people.person.parents"]
    )
    assert {"language", "country", "spoken", "acted", "people", "parent"} <= words.words
    assert "duke" not in words.words and "richmond" not in words.words
    assert words.share(["official", "languages"]) == 0.5


def test_relation_words_of_a_large_schema_need_two_types() -> None:
    names = [f"domain{i}.thing.name_{i}" for i in range(100)] + ["location.australian_state.capital"]
    words = RelationWords.from_names(names)
    assert "thing" in words.words and "australian" not in words.words


def test_partial_name_quality_accepts_surnames_prefixes_and_suffixes() -> None:
    assert partial_name_quality(["franklin"], ["benjamin", "franklin"]) == pytest.approx(0.5)
    assert partial_name_quality(["ben", "franklin"], ["benjamin", "franklin"]) > 0
    assert partial_name_quality(["nike"], ["nike", "inc"]) > 0
    assert partial_name_quality(["luther"], ["martin", "luther", "king"]) == 0
    assert partial_name_quality(["franklin"], ["franklin"]) == 0  # an exact match is no partial one


def test_partial_name_quality_reads_a_short_first_word_as_initials() -> None:
    assert partial_name_quality(["ny", "giants"], ["new", "york", "giants"]) == pytest.approx(8 / 13)
    assert partial_name_quality(["us", "army"], ["united", "states", "army"]) > 0
    assert partial_name_quality(["ny", "times"], ["new", "york", "giants"]) == 0  # the rest must name it too
    assert partial_name_quality(["ny"], ["new", "york"]) == 0  # alone it is an acronym, not a partial name


def test_partial_name_quality_passes_over_middle_names_only_between_mention_words() -> None:
    assert partial_name_quality(["william", "taft"], ["william", "howard", "taft"]) > partial_name_quality(
        ["taft"], ["william", "howard", "taft"]
    )
    assert partial_name_quality(["niels", "bohr"], ["niels", "henrik", "david", "bohr"]) > 0
    assert (
        partial_name_quality(["niels", "bohr"], ["niels", "ann", "bea", "cy", "bohr"]) == 0
    )  # too many left out
    # Initials are no words left out: "tolkien" names J. R. R. Tolkien.
    assert partial_name_quality(["tolkien"], ["j", "r", "r", "tolkien"]) > 0
    assert partial_name_quality(["taft", "william"], ["william", "howard", "taft"]) == 0  # out of order
    # One word starts the name ("tupac") or ends it; "last" does neither in "The Last Song".
    assert partial_name_quality(["tupac"], ["tupac", "shakur"]) > 0
    assert partial_name_quality(["last"], ["the", "last", "song"]) == 0


def test_strip_possessive_drops_apostrophe_s() -> None:
    assert strip_possessive("franklin's") == "franklin"
    assert strip_possessive("franklin") is None


def test_demonym_reads_adjectives_of_one_word_places() -> None:
    assert demonym_stem("jamaican") == "jama"
    assert is_demonym_of("jamaican", "jamaica") and is_demonym_of("egyptian", "egypt")
    assert is_demonym_of("brazilians", "brazil")
    assert not is_demonym_of("george", "georgia") and not is_demonym_of("jamaican", "jamaican dollar")


def test_demonym_ends_as_english_demonyms_do() -> None:
    assert is_demonym_of("tibetan", "tibet") and is_demonym_of("australians", "australia")
    assert is_demonym_of("portuguese", "portugal") and is_demonym_of("israeli", "israel")
    assert is_demonym_of("swedish", "sweden") and is_demonym_of("islamic", "islam")
    assert not is_demonym_of("princess", "prince") and not is_demonym_of("currently", "currency")
    assert not is_demonym_of("modern", "mode") and not is_demonym_of("player", "play")


def test_link_a_people_after_a_quantifier_and_no_title_read_as_a_people(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # Australia, Leia Organa and the lone-word entities Language, Speak, Prince, cut from the KB
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_demonyms.tsv"), fake_embedder)
    # "most" qualifies the people's word; it is no compound "most australians" heads
    assert link(store, fake_embedder, "what language do most australians speak?").topics[0].id == "Australia"
    # "princess" is a word of its own, not the people of Prince
    assert link(store, fake_embedder, "where does princess leia live?").topics[0].id == "Leia Organa"


def test_demonym_reads_a_doctrine_from_its_followers_word() -> None:
    assert is_demonym_of("buddhist", "buddhism") and is_demonym_of("buddhists", "buddhism")
    assert is_demonym_of("catholic", "catholicism") and is_demonym_of("communists", "communism")
    assert not is_demonym_of("buddha", "buddhism") and not is_demonym_of("catholic", "catholicism and")


def test_link_a_doctrine_from_its_followers_word(kglite_store: KgliteStore, fake_embedder: Embedder) -> None:
    # Buddhism, Catholicism, Gautama Buddha and the Holy Roman Empire, cut from the KB
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_doctrines.tsv"), fake_embedder)
    assert (
        link(store, fake_embedder, "what is the holy book of the buddhist religion?").topics[0].id
        == "Buddhism"
    )
    assert link(store, fake_embedder, "what are the catholic holy days?").topics[0].id == "Catholicism"
    assert link(store, fake_embedder, "what country did buddha come from?").topics[0].id == "Gautama Buddha"


def test_acronym_spells_initials_with_or_without_small_words() -> None:
    assert is_acronym_of("uk", "united kingdom")
    assert is_acronym_of("usa", "united states of america") and is_acronym_of(
        "us", "united states of america"
    )
    assert is_acronym_of("jfk", "john f kennedy")
    assert not is_acronym_of("uk", "ukraine")
    # a Roman numeral is spelt whole
    assert is_acronym_of("wwii", "world war ii") and is_acronym_of("wwi", "world war i")
    assert not is_acronym_of("wwii", "world war i")


def test_link_demonym_names_its_country(wqsp_kg: KgliteStore, fake_embedder: Embedder) -> None:
    assert link(wqsp_kg, fake_embedder, "what does jamaican people speak?").topics[0].id == "Jamaica"


def test_link_partial_name_finds_the_full_name(wqsp_kg: KgliteStore, fake_embedder: Embedder) -> None:
    assert link(wqsp_kg, fake_embedder, "where did franklin work?").topics[0].id == "Benjamin Franklin"


def test_link_possessive_is_looked_up_without_apostrophe_s(
    wqsp_kg: KgliteStore, fake_embedder: Embedder
) -> None:
    assert link(wqsp_kg, fake_embedder, "who was franklin's son?").topics[0].id == "Benjamin Franklin"


def test_link_popularity_prior_prefers_the_better_connected_reading(
    wqsp_kg: KgliteStore, fake_embedder: Embedder
) -> None:
    # "Tupac" (1 fact) is a name of its own; Tupac Shakur (12 facts) is the better reading.
    assert link(wqsp_kg, fake_embedder, "what book did tupac write?").topics[0].id == "Tupac Shakur"


def test_link_relation_words_are_no_topic(wqsp_kg: KgliteStore, fake_embedder: Embedder) -> None:
    # "Language" is an entity, but the word names the relation (film.film.language).
    assert link(wqsp_kg, fake_embedder, "what language do they use in egypt?").topics[0].id == "Egypt"


def test_link_lone_words_weigh_the_better_connected_name(
    wqsp_kg: KgliteStore, fake_embedder: Embedder
) -> None:
    # The film "Speak" (1 fact) is a longer word than "peru" (4 facts), but Peru is the topic.
    assert link(wqsp_kg, fake_embedder, "what language does peru speak?").topics[0].id == "Peru"


def test_link_a_place_named_after_a_place_qualifies_it(wqsp_kg: KgliteStore, fake_embedder: Embedder) -> None:
    # New Zealand is a named mention and the better connected, but it narrows Christchurch, and
    # is no second topic: the sights of Christchurch need not be tied to New Zealand too.
    linked = link(wqsp_kg, fake_embedder, "what to see in christchurch new zealand?")
    assert [t.id for t in linked.topics] == ["Christchurch"]


def test_a_qualifying_place_or_an_asked_class_is_no_second_topic(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # facts of Kansas City and Eva Perón (webqsp_evidence_not_topics.tsv): the graph ties Kansas
    # and Cancer to them, but "kansas" after "kansas city" says which Kansas City, and "what type
    # of cancer" asks for kinds of cancer: neither is a second thing the answers are tied to
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_not_topics.tsv"), fake_embedder)
    for question, topic in (
        ("what county is kansas city kansas?", "Kansas City"),
        ("what type of cancer did eva peron die from?", "Eva Perón"),
    ):
        assert [t.id for t in link(store, fake_embedder, question).topics] == [topic]


def test_link_title_without_its_article_is_no_named_mention(
    wqsp_kg: KgliteStore, fake_embedder: Embedder
) -> None:
    # "people speak" spells the film The People Speak only without its article.
    assert link(wqsp_kg, fake_embedder, "what language do people speak in brazil?").topics[0].id == "Brazil"
    assert link(wqsp_kg, fake_embedder, "who produced the people speak?").topics[0].id == "The People Speak"


def test_link_partial_name_over_a_middle_name(wqsp_kg: KgliteStore, fake_embedder: Embedder) -> None:
    assert (
        link(wqsp_kg, fake_embedder, "what is william taft famous for?").topics[0].id == "William Howard Taft"
    )


def test_forms_of_a_relation_words_stem_are_relation_words() -> None:
    words = RelationWords.from_names(["directed_by", "starred_actors", "has_tags", "used_for"])
    forms = words.with_forms(["director", "directors", "starring", "usa", "cuba", "tag"])
    assert {"director", "starring"} <= forms.words  # "direct" of directed, "starr" of starred
    assert not {"usa", "cuba"} & forms.words  # "us" of used is too short a stem to stand for it
    assert words.with_forms(["cuba"]) is words


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    from kgqa.config import EmbedderSettings
    from kgqa.embed import make_embedder

    return make_embedder(EmbedderSettings())


def test_other_forms_of_relation_words_are_relation_words(minilm: Embedder) -> None:
    words = RelationWords.from_names(
        ["event.public_speaker.speeches_or_presentations", "location.country.languages_spoken"]
    ).embedded(minilm)
    near = words.with_near(["speak", "japan", "afrikaans"], minilm)
    assert "speak" in near.words  # speaker, speech: same stem, close in meaning
    assert "japan" not in near.words and "afrikaans" not in near.words  # near "country", not its form
    assert words.with_near(["japan"], minilm) is words
    assert words.near_cache == {"speak": True, "japan": False, "afrikaans": False}  # each word embedded once


def test_link_a_lone_word_that_names_a_relation_is_no_topic(wqsp_kg: KgliteStore, minilm: Embedder) -> None:
    # "speak" is the film Speak by its whole name, "afrikaans" only part of "Afrikaans Language";
    # with the model the linker reads "speak" as a form of the relation words "speaker", "speech".
    question = "where do they speak afrikaans?"
    assert link(wqsp_kg, minilm, question).topics[0].id == "Afrikaans Language"
    assert link(wqsp_kg, lambda: minilm, question).topics[0].id == "Speak"  # a factory: names only


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("What language do Jamaican people speak?", "Jamaica"),  # not The People Speak
        ("Where did Franklin work?", "Benjamin Franklin"),
        ("Who produced The People Speak?", "The People Speak"),  # capitals that name a title whole
    ],
)
def test_link_capitals_no_name_matches_whole_are_read_as_people_type_them(
    wqsp_kg: KgliteStore, fake_embedder: Embedder, question: str, topic: str
) -> None:
    assert link(wqsp_kg, fake_embedder, question).topics[0].id == topic


def test_link_with_no_name_found_takes_the_full_text_hit_holding_most_words_then_the_better_connected(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # 19 lines of the KB: United States of America (16 facts), United States Senator (5), and
    # relation names with "united" and "state" in them, so "the united states" is no name the
    # name step reads and the full-text index is the fallback. Its relevance favours the
    # shorter name; both hold "united" and "states", and the country is the better connected.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_united_states.tsv"), fake_embedder)
    linked = link(store, fake_embedder, "what type of religions are in the united states?")
    assert linked.method == "fulltext"
    assert linked.topics[0].id == "United States of America"
    assert linked.contenders() == [linked.topics[0]]  # the senator is no close call


def test_link_an_acronym_reading_weighs_its_entitys_facts(
    kglite_store: KgliteStore, minilm: Embedder
) -> None:
    # 15 lines of the KB: "uk" is a top-level domain with 3 facts, United Kingdom has 12. The
    # acronym's reading (found among the word's nearest entity embeddings) had no degree, so the
    # popularity prior took the exact lower-case name.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_uk.tsv"), minilm)
    assert link(store, minilm, "what countries are part of the uk?").topics[0].id == "United Kingdom"


def test_link_a_partial_name_starts_with_a_content_word(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # 24 lines of the KB. "of the supreme court" ends the name Seal of the Supreme Court (1 fact)
    # and covered more of it than "supreme court" covers of Supreme Court of the United States
    # (12 facts), so the longer mention took the question; "of the" names nothing.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_mentions.tsv"), fake_embedder)
    linked = link(store, fake_embedder, "who are the 9 justices of the supreme court 2011?")
    assert linked.topics[0].id == "Supreme Court of the United States"


def test_link_a_plural_demonym_after_a_word_is_no_place(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # "indians" reads as India (8 facts here) on its own; after "sioux" it heads a compound whose
    # first word names the topic (Sioux, 3 facts). An adjective keeps its place after a verb.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_mentions.tsv"), fake_embedder)
    assert link(store, fake_embedder, "what language did the sioux indians speak?").topics[0].id == "Sioux"
    assert link(store, fake_embedder, "where do indians live?").topics[0].id == "India"


def test_link_a_proper_name_before_a_partial_one_narrows_it(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # "state senator" is part of United States Senator's name ("state" a prefix of "states"), a
    # mention of two words that outranked the lone word "texas"; Texas narrows it and is the
    # topic. "canadian" does not narrow Prime Minister of Canada, whose name holds its place.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_mentions.tsv"), fake_embedder)
    assert [t.id for t in link(store, fake_embedder, "who is the texas state senator?").topics] == [
        "Texas",
        "United States Senator",
    ]
    linked = link(store, fake_embedder, "who was canadian prime minister in 1993?")
    assert linked.topics[0].id == "Prime Minister of Canada"


def test_link_a_place_another_qualifies_as_that_place(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # Facts of Montreal (3), Montreal Canadiens (30) and Canada (12), cut from the KB: "montreal"
    # alone reads likelier as the better connected team; "canada" after it qualifies a place,
    # so the question is about the city, not the country and not the team.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_montreal.tsv"), fake_embedder)
    assert link(store, fake_embedder, "what province is montreal canada located?").topics[0].id == "Montreal"
    assert link(store, fake_embedder, "when did montreal win the cup?").topics[0].id == "Montreal Canadiens"


def test_link_a_name_whose_initials_the_question_spells_out(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # Facts of George H. W. Bush, John F. Kennedy, F. Scott Fitzgerald and the character Herbert,
    # cut from the KB (webqsp_evidence_initials.tsv): people write out the middle names the KB
    # keeps as initials, and "herbert" or "fitzgerald" alone took the question.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_initials.tsv"), fake_embedder)
    bush = link(store, fake_embedder, "where did george herbert walker bush go to college?")
    assert bush.topics[0].id == "George H. W. Bush"
    kennedy = link(store, fake_embedder, "who was john fitzgerald kennedy's father?")
    assert kennedy.topics[0].id == "John F. Kennedy"


def test_link_an_acronym_with_a_possessive(kglite_store: KgliteStore, minilm: Embedder) -> None:
    # "jfk's" is no 3-letter word; without its possessive it spells John F. Kennedy's initials.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_mentions.tsv"), minilm)
    assert link(store, minilm, "what was the name of jfk's brothers?").topics[0].id == "John F. Kennedy"


def test_link_a_longer_acronym_no_name_reads(kglite_store: KgliteStore, minilm: Embedder) -> None:
    # 24 lines of the KB (webqsp_evidence_nafta.tsv): "nafta" spells the initials of the North
    # American Free Trade Agreement; it was no word of 2-4 letters, so "countries" took the
    # question as part of Nordic countries. A word of 5 letters that a name reads, even in part
    # ("nordic"), is that name's and no acronym.
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_nafta.tsv"), minilm)
    nafta = "North American Free Trade Agreement"
    assert link(store, minilm, "what countries does nafta include?").topics[0].id == nafta
    assert link(store, minilm, "what countries are nordic?").topics[0].id == "Nordic countries"


def test_link_a_lone_word_many_names_share_is_the_weaker_partial_name(
    kglite_store: KgliteStore, fake_embedder: Embedder
) -> None:
    # facts of Michael Crabtree and of colleges (webqsp_evidence_shared_words.tsv): "college"
    # is a word of every college's name, "crabtree" of one name only, so it is the one a person
    # uses for a name; "key college" reads "key" as initials and outscored the surname
    store = load_excerpt(kglite_store, EXCERPT.with_name("webqsp_evidence_shared_words.tsv"), fake_embedder)
    assert link(store, fake_embedder, "where did crabtree go to college?").topics[0].id == "Michael Crabtree"
