"""The name step: exact and fuzzy names (and people's words) together, mentions chosen
without overlap."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from kgqa.embed.protocol import Embedder
from kgqa.link.exact import exact_rows, rank_rows
from kgqa.link.fuzzy import fuzzy_matches
from kgqa.link.matches import (
    Match,
    candidate,
    lone_word_rank,
    prior,
    span_rank,
    span_tier,
    title_without_article,
    twins,
    uncased_lone_rank,
    uncased_span_rank,
)
from kgqa.link.people import acronym_matches, people_matches
from kgqa.link.result import LinkResult, interleave, unique
from kgqa.link.search import EmbedderSource, link_fulltext
from kgqa.link.tokens import ARTICLES, Token, asks_kinds_of, content_words, is_proper, ngrams
from kgqa.linking_words import RelationWords, is_demonym_of, popularity
from kgqa.names import normalise_name
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import LinkedEntity


def link_names(
    store: GraphStore,
    question: str,
    tokens: Sequence[Token],
    *,
    max_ngram: int,
    fulltext_limit: int,
    relation_words: RelationWords | None = None,
    embedder: EmbedderSource | None = None,
) -> LinkResult:
    """Exact and fuzzy name matches, one group of entities per chosen mention, best mention first.

    Every n-gram is looked up exactly (``link_exact``); the content words no name-like exact match
    covers go to the full-text index as fuzzy terms (``link_fulltext``, ``word~1``), whose hits are
    re-scored against the question's n-grams with rapidfuzz (:func:`fuzzy_matches`). Mentions are
    then ranked by :func:`span_rank` and chosen without overlap, so a longer fuzzy match of a real
    name ("forest gump" -> Forrest Gump) beats a short exact one ("forest"), and a lone common noun
    ("director") is dropped when a named mention is present.

    A question without capitals gets people's words as well (:func:`people_matches`): partial
    names, demonyms, possessives and, where ``embedder`` is a loaded model (a factory is left
    to the vector step), acronyms; its mentions made of relation words ("official language",
    and with a loaded model other forms of them: "speak" for ``languages_spoken``,
    :meth:`RelationWords.with_near`) rank as common nouns, and the popularity prior
    (:func:`prior`) orders the readings of a mention.
    """
    uncased = not any(t.capitalised for t in tokens)
    model = embedder if uncased and isinstance(embedder, Embedder) else None  # a factory is the vector step's
    if uncased and relation_words is None:
        relation_words = RelationWords.from_store(store)
        relation_words = relation_words if model is None else relation_words.embedded(model)
    if uncased and relation_words is not None:
        relation_words = relation_words.with_forms(content_words(tokens))
    if model is not None and relation_words is not None:
        relation_words = relation_words.with_near(content_words(tokens), model)
    spans = ngrams(question, tokens, max_ngram=max_ngram, relation_words=relation_words if uncased else None)
    rows_by_norm = exact_rows(store, {s.norm for s in spans})
    matches = [
        Match(span, row, 1.0, cue)
        for span in spans
        for row, cue in rank_rows(
            rows_by_norm.get(span.norm, []),
            span.text,
            raw=span.raw,
            uncased=uncased,
            article=_word_before(span.start, tokens),
        )
    ]
    covered = {i for m in matches if span_tier(m, uncased) < 2 for i in range(m.span.start, m.span.end)}
    leftover = [i for i, t in enumerate(tokens) if t.content and i not in covered]
    if leftover:
        matches += fuzzy_matches(store, tokens, spans, leftover, limit=fulltext_limit, uncased=uncased)
    if uncased and relation_words is not None:
        matches += people_matches(store, tokens, spans, matches, relation_words, limit=fulltext_limit)
        if model is not None:
            matches += acronym_matches(store, model, tokens, spans, matches, relation_words)
    by_span: dict[tuple[int, int], list[Match]] = {}
    for match in matches:
        by_span.setdefault((match.span.start, match.span.end), []).append(match)
    groups = [
        sorted(
            group,
            key=_uncased_order(group, _after_article(group, tokens)) if uncased else (lambda m: -m.quality),
        )
        for group in by_span.values()  # sorted is stable
    ]
    chosen: list[list[Match]] = []
    taken: set[int] = set()
    for group in sorted(
        groups, key=lambda g: uncased_span_rank(g[0]) if uncased else span_rank(g[0], uncased)
    ):
        span = group[0].span
        if taken.isdisjoint(range(span.start, span.end)):
            taken.update(range(span.start, span.end))
            chosen.append(group)
    qualifying = _qualifiers(chosen)
    # a place another qualifies is read as that place ("montreal canada": Montreal, though the
    # better connected Montreal Canadiens leads the popularity order of "montreal")
    chosen = [_whole_names_first(g) if g[0].span.end in qualifying else g for g in chosen]
    chosen = [g for g in chosen if g[0].span.start not in qualifying] + [
        g for g in chosen if g[0].span.start in qualifying
    ]
    if chosen:
        best_tier = span_rank(chosen[0][0], uncased)[0]
        if best_tier == 0:
            # The question capitalises names, so lower-case words are not mentions ("films", "star"),
            # but for the whole of a name people left in lower case ("Tom Hanks and meg ryan"), and a
            # lone word naming one the graph ties to the topic ("who plays forward for FC Barcelona").
            named = [g for g in chosen if g[0].span.name_like or _uncapitalised_name(g)]
            rest = [g for g in chosen if g not in named]
            chosen = named + _tied_lone_names(store, candidate(named[0][0]), rest, tokens, qualifying)
        elif best_tier == 1:
            # A named mention is present: a lone common noun ("director") is not a topic, nor,
            # beside a whole name, a partial one ("come out" of Come Out and Play beside "cast away"),
            # but a lone word naming one the graph ties to the topic is ("tigres uanl ... mexico").
            first = chosen[0][0]
            narrowing = [g for g in chosen if first.kind == "partial" and _narrows(g[0], first)]
            whole = first.kind == "name" and first.quality >= 1.0
            named = narrowing + [
                g
                for i, g in enumerate(chosen)
                if span_tier(g[0], uncased) < 2 and not (i and whole and g[0].kind == "partial")
            ]
            rest = [g for g in chosen if g not in named]
            chosen = named + _tied_lone_names(store, candidate(named[0][0]), rest, tokens, qualifying)
        elif any(g[0].span.start in qualifying and span_tier(g[0], uncased) < 2 for g in chosen):
            # A lone name a named mention qualifies ("christchurch new zealand") is the topic.
            heads = [g for g in chosen if g[0].span.end in qualifying]
            chosen = heads + [g for g in chosen if span_tier(g[0], uncased) < 2 and g not in heads]
        else:
            # Only lone words: one of them is the topic, the others its runners-up. Unless one of
            # them is a proper name in the KB, full-text hits for a partial name ("films by
            # zemeckis") join them, ahead of lower-case tags.
            lone = interleave([[candidate(m) for m in group] for group in chosen])
            proper = is_proper(lone[0].name)
            partial = () if proper else link_fulltext(store, tokens, limit=fulltext_limit)
            if uncased:
                group_of = {candidate(g[0]).id: g for g in chosen}

                def rank(c: LinkedEntity) -> tuple[bool, tuple[bool, bool, bool, bool, float]]:
                    group = group_of.get(c.id)
                    qualifier = group is not None and group[0].span.start in qualifying
                    return (qualifier, uncased_lone_rank(c, group))

                ranked = tuple(sorted(unique((*lone, *partial)), key=rank))
            else:
                ranked = tuple(sorted(unique((*lone, *partial)), key=lone_word_rank))
            top = ranked[0]
            groups = [g for g in chosen if candidate(g[0]) == top]
            if groups:
                fetched = None if proper else partial  # fetched, even where it found nothing
                ties = _with_bearers(store, twins(groups[0]), tokens, fulltext_limit, fetched)
            else:  # a partial name: the full-text hits that scored the same
                ties = tuple(c for c in partial if (c.mention, c.score) == (top.mention, top.score))
            # the other lone words are runners-up, but for names the graph ties to the topic
            # ("name a player who plays at forward from mexico")
            tied = [candidate(g[0]) for g in _tied_lone_names(store, top, chosen, tokens, qualifying)]
            return LinkResult(ranked, chosen=(top, *tied), ties=ties)
    # a place that qualifies a chosen one ("christchurch new zealand") only says which is meant:
    # as a second topic it would ask for answers tied to both
    head_ends = {g[0].span.end for g in chosen}
    chosen = [g for g in chosen if not (g[0].span.start in qualifying and g[0].span.start in head_ends)]
    if not chosen:
        return LinkResult(())
    ties = _with_bearers(store, twins(chosen[0]), tokens, fulltext_limit)
    return LinkResult(interleave([[candidate(m) for m in group] for group in chosen]), ties=ties)


#: A neighbour in common with more relationships than this ties no two entities
#: (:func:`_tied_lone_names`): a genre, a year or a country shares a neighbour with much of a graph.
TIE_MAX_DEGREE = 100


def _tied_lone_names(
    store: GraphStore,
    topic: LinkedEntity,
    groups: Sequence[list[Match]],
    tokens: Sequence[Token],
    qualifying: set[int],
) -> list[list[Match]]:
    """The mentions among ``groups`` that name a second topic: a lone lower-case word that is the
    whole name of a proper name in the graph (no relation word, no title without its article),
    neither a place qualifying the mention before it (``qualifying``: "kansas city kansas") nor
    the noun whose kinds the question asks for ("what type of cancer"; a noun right after "which"
    stays: "which spain footballer" asks for things tied to Spain), which the graph
    ties to ``topic``: a relationship between them, or a neighbour in common of at most
    :data:`TIE_MAX_DEGREE` relationships (``link_tied``).

    Why: people type positions, countries and shows in lower case ("which player in tigres uanl
    is from mexico", "who did woody harrelson play on cheers"), and a lone lower-case word is
    otherwise a common word at best a runner-up; WorldCup2014's two-topic questions typed so
    answered 34 of 300. The tie tells the name from a common word some title bears: "star" or
    "speak" share nothing with the question's topic.
    """
    lone = [
        g
        for g in groups
        if _lone_name(g[0])
        and g[0].span.start not in qualifying
        and not asks_kinds_of([t.word for t in tokens[max(0, g[0].span.start - 3) : g[0].span.start]])
    ]
    ids = [candidate(g[0]).id for g in lone if candidate(g[0]).id != topic.id]
    if not ids:
        return []
    rows = store.run(queries.get("link_tied"), {"topic": topic.id, "ids": ids, "max_degree": TIE_MAX_DEGREE})
    tied = {row["id"] for row in rows}
    return [g for g in lone if candidate(g[0]).id in tied]


def _lone_name(match: Match) -> bool:
    """The mention is one lower-case word, the whole name of a proper name in the graph: no
    relation word ("star"), no title without its article ("speak" of The People Speak)."""
    return (
        match.span.words == 1
        and not match.span.name_like
        and match.kind == "name"
        and _whole_proper_name(match)
        and not title_without_article(match)
    )


def _uncased_order(
    group: Sequence[Match], after_article: bool
) -> Callable[[Match], tuple[bool, bool, float]]:
    """The order of a lower-case question's readings of one mention: by the popularity prior
    (:func:`prior`), except that a whole name the question's article contradicts follows a twin
    it fits ("the animal kingdom" -> The Animal Kingdom before the better connected Animal
    Kingdom; "girl" -> Girl before The Girl: :func:`~kgqa.link.exact.rank_rows`' article cue),
    and where an article stands before the mention (``after_article``), a whole name it fits
    comes before the other readings: "the movie the war" is about The War, not the better
    connected tag "world war ii" that holds the word. Partial names and other readings are
    weighed by the prior alone."""
    fitting = any(m.kind == "name" and m.cue[:1] == (False,) for m in group)

    def key(match: Match) -> tuple[bool, bool, float]:
        whole = match.kind == "name"
        fits = after_article and whole and match.cue[:1] == (False,)
        return (not fits, fitting and whole and match.cue[:1] == (True,), -prior(match))

    return key


def _after_article(group: Sequence[Match], tokens: Sequence[Token]) -> bool:
    """Whether an article stands right before the group's mention ("the war")."""
    return _word_before(group[0].span.start, tokens) in ARTICLES


def _word_before(start: int, tokens: Sequence[Token]) -> str:
    """The question's word right before token ``start``, lower case ("" at the start): where an
    article cues the title a mention names (``rank_rows``, :func:`_uncased_order`)."""
    return tokens[start - 1].text.lower() if start else ""


def _uncapitalised_name(group: Sequence[Match]) -> bool:
    """Whether a group's mention is several lower-case words that are the whole of a name the
    KB capitalises: a person who capitalises one name may type the next in lower case ("which
    movies did Tom Hanks and meg ryan star in together"). A lower-case question reads such a
    mention as a name too; a lone word ("star", "films") stays a common word."""
    first = group[0]
    return (
        first.kind == "name"
        and first.quality >= 1.0
        and first.span.words > 1
        and any(is_proper(m.name) for m in group)
    )


def _with_bearers(
    store: GraphStore,
    ties: tuple[LinkedEntity, ...],
    tokens: Sequence[Token],
    limit: int,
    hits: Sequence[LinkedEntity] | None = None,
) -> tuple[LinkedEntity, ...]:
    """``ties`` and, where they are one-word tags only (names the KB writes without capitals),
    the proper names of two words or more that end in the word among the question's full-text
    hits (``hits`` where already fetched), each as a reading of the tag's mention.

    Why: MetaQA tags films with their directors' surnames, and "which films did spielberg
    direct" means Steven Spielberg, not the films tagged "spielberg" (the tag's exact name
    would otherwise win outright); as contenders, the retriever's fit chooses. Beside a proper
    name of that one word, only a bearer far better known than it (:func:`_far_better_known`):
    "films by hitchcock" means Alfred Hitchcock (49 facts), not the film Hitchcock (5), but
    "the actors in circus" names the film Circus (10), and Battle Circus (8) is no bearer of a
    surname (MetaQA 3-hop tuning part, default checkpoint: 2 lost where every bearer competed).
    """
    if not ties or any(len(t.name.split()) != 1 for t in ties):
        return ties
    word = ties[0].name.lower()
    hits = link_fulltext(store, tokens, limit=limit) if hits is None else hits
    bearers = [
        h for h in hits if is_proper(h.name) and len(n := h.name.lower().split()) > 1 and n[-1] == word
    ]
    proper = [t for t in ties if is_proper(t.name)]
    if proper and bearers:
        bearers = _far_better_known(store, bearers, proper)
    return unique((*ties, *(replace(h, mention=ties[0].mention) for h in bearers)))


#: How much better known (in the popularity prior, log(1 + degree)) a name ending in a word must
#: be than a proper name of that word alone to compete with it (:func:`_with_bearers`): one
#: e-fold, about 2.7 times the facts.
BEARER_FAME = 1.0


def _far_better_known(
    store: GraphStore, bearers: Sequence[LinkedEntity], names: Sequence[LinkedEntity]
) -> list[LinkedEntity]:
    """The ``bearers`` whose popularity prior exceeds every one of ``names``' by
    :data:`BEARER_FAME` (degrees read with one ``link_exact`` query)."""
    rows = exact_rows(store, {normalise_name(e.name) for e in (*bearers, *names)})
    degree = {row["id"]: row["degree"] for group in rows.values() for row in group}
    known = max(popularity(degree.get(e.id)) for e in names)
    return [b for b in bearers if popularity(degree.get(b.id)) >= known + BEARER_FAME]


def _qualifiers(chosen: Sequence[Sequence[Match]]) -> set[int]:
    """Starts of the chosen mentions that qualify the one right before them, a proper name in
    the graph by their best reading, the one before by any of its readings ("seattle
    washington", "christchurch new zealand", "Paris, France", "montreal canada", where Montreal
    Canadiens is the likelier reading of "montreal" alone): a place named after a place narrows
    the first, which the question is about.

    Why: the larger place is often the better connected one, so the popularity prior alone
    would take it; English puts the qualifier after the name it qualifies.
    """
    ends = {g[0].span.end for g in chosen if any(_whole_proper_name(m) for m in g)}
    return {g[0].span.start for g in chosen if _whole_proper_name(g[0]) and g[0].span.start in ends}


def _whole_names_first(group: Sequence[Match]) -> list[Match]:
    """``group``'s readings with its whole proper names first, in their order."""
    return sorted(group, key=lambda m: not _whole_proper_name(m))  # sorted is stable


def _narrows(match: Match, partial: Match) -> bool:
    """Whether ``match``, a proper name right before a partial name, narrows it and is the
    topic: "texas state senator" asks for Texas's state senator, not about (United) States
    Senator. Not where the partial name holds it already, as a word or as the place its
    adjective names ("canadian prime minister" is Prime Minister of Canada)."""
    if match.span.end != partial.span.start or not _whole_proper_name(match):
        return False
    words = normalise_name(partial.name).split()
    return not any(match.span.norm == w or is_demonym_of(match.span.norm, w) for w in words)


def _whole_proper_name(match: Match) -> bool:
    """The mention is the whole name of a proper name in the graph, no relation words."""
    return match.quality >= 1.0 and not match.span.relational and is_proper(match.name)
