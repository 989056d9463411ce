"""Name matches of question mentions and how they rank: against each other for a mention,
and mentions against mentions (named before common, longer before shorter)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kgqa.link.result import SCORE_EXACT, entity, unique
from kgqa.link.tokens import ARTICLES, Span, case_key, is_proper
from kgqa.linking_words import popularity
from kgqa.types import LinkedEntity

MatchKind = Literal["name", "typo", "partial", "demonym", "acronym"]


PRIOR_QUALITY_WEIGHT = 3.0  # match quality against log(1 + degree): a partial name needs ~5x the facts
#: Matched letters against the popularity prior for lone words (:func:`_lone_strength`): each
#: letter is worth doubling the entity's facts. Chosen on the training parts of MetaQA (typed
#: in lower case) and WebQSP-evidence, linker alone (docs/decisions.md).
LONE_LENGTH_WEIGHT = 0.7
#: What each e-fold of names sharing a lone word's partial reading costs it (``uncased_lone_rank``):
#: a word many names hold ("college") is a class noun more often than the name a person means.
#: Chosen on the training parts of WebQSP-evidence and MetaQA typed in lower case, linker alone
#: (0.5 and 1.0 won the same question, 2.0 lost one; docs/decisions.md).
SHARING_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class Match:
    """One entity row matched to one question span; ``quality`` in (0, 1], 1 for an exact match."""

    span: Span
    row: dict[str, Any]
    quality: float
    cue: tuple[bool, ...]  # see rank_rows: equal cues and quality = twins the text cannot separate
    kind: MatchKind = "name"  # how the span names the row: whole name, typo, partial name, demonym

    @property
    def name(self) -> str:
        """The entity's name, its id where it has none."""
        return str(self.row["name"] or self.row["id"])


def candidate(match: Match) -> LinkedEntity:
    """The candidate a match gives: ``exact`` at 0.95, else ``fulltext`` (a partial name) or
    ``fuzzy`` at 0.95 times its quality."""
    method = "exact" if match.quality >= 1.0 else "fulltext" if match.kind == "partial" else "fuzzy"
    return entity(match.row, SCORE_EXACT * match.quality, match.span.text, method)


def prior(match: Match) -> float:
    """How likely a reading of a mention is, in a question without capitals: the popularity
    prior (log(1 + degree)) plus ``PRIOR_QUALITY_WEIGHT`` times the match quality, so a partial
    name wins over an exact one when its entity is far better connected ("tupac": Tupac Shakur
    over the book author record "Tupac")."""
    return popularity(match.row.get("degree")) + PRIOR_QUALITY_WEIGHT * match.quality


def twins(group: Sequence[Match]) -> tuple[LinkedEntity, ...]:
    """The best match of a mention and those the question's text cannot tell from it (same
    quality, same cue from :func:`rank_rows`)."""
    best = group[0]
    return unique(candidate(m) for m in group if (m.quality, m.cue) == (best.quality, best.cue))


def span_tier(match: Match, uncased: bool) -> int:
    """0: a capitalised mention equal to its entity's name in letter case ("Crazy Heart", not the
    title "Movie Crazy" matched case-insensitively in "the movie Crazy Heart"); 1: a named
    mention: capitals or digits in the question, or several words ("tom hanks", "forest gump");
    2: the rest, lone lower-case words ("films", "director", "star"), which may still name an
    entity ("jaws") but are weighed by fit when nothing named competes, and, in a question
    without capitals, mentions made mostly of relation words ("official language") and words
    that name a title only without its article ("do people speak" is no mention of the film
    The People Speak; "the hunger games" is one of The Hunger Games).
    """
    span = match.span
    if span.capitalised and _case_exact(match) and match.quality >= 1.0:
        return 0
    if uncased and (span.relational or title_without_article(match)):
        return 2
    return 1 if span.name_like or span.words > 1 else 2


def title_without_article(match: Match) -> bool:
    """The name starts with an article the question does not put before the mention (the
    article cue of :func:`~kgqa.link.exact.rank_rows` against the name)."""
    return (
        match.kind == "name" and match.cue[:1] == (True,) and match.name.split(" ", 1)[0].lower() in ARTICLES
    )


def _case_exact(match: Match) -> bool:
    """The mention has its entity's name in the same letter case (punctuation and a leading
    article aside)."""
    return case_key(match.name, bare=True) == case_key(match.span.text, bare=True)


def span_rank(match: Match, uncased: bool) -> tuple[int, float, bool, int]:
    """Order of mentions (by their best match), used to resolve overlaps and to rank the chosen ones.

    1. Tier (:func:`span_tier`).
    2. Matched length: the span's normalised characters times the match quality, so "rush hour 2"
       comes before "2" and "forest gump" (Forrest Gump, 0.92) before "forest" (an exact tag);
       among lone words, names the KB capitalises come first.
    3. A case-exact match, 4. earlier position.
    """
    span = match.span
    tier, length, case_exact = span_tier(match, uncased), len(span.norm) * match.quality, _case_exact(match)
    if tier == 2:  # lone words: a proper name in the KB ("jaws" -> Jaws) before a tag ("director")
        length += 1000.0 * is_proper(match.name)
    return (tier, -length, not case_exact, span.start)


def uncased_span_rank(match: Match) -> tuple[int, bool, bool, bool, float, int]:
    """:func:`span_rank` for a question without capitals: named mentions (several words, or
    digits) by matched length first, then lone words and relation-word mentions as
    :func:`uncased_lone_rank` orders them."""
    tier = span_tier(match, True)
    if tier < 2:
        rank = span_rank(match, True)
        return (tier, False, False, False, rank[1], match.span.start)
    return (2, *_lone_key(match, match.name), match.span.start)


def uncased_lone_rank(
    cand: LinkedEntity, group: Sequence[Match] | None
) -> tuple[bool, bool, bool, bool, float]:
    """Order of lone-word candidates in a question without capitals: whole-name matches before
    the full-text bag of words, mentions of relation words last ("capital" after "egypt"),
    proper names before tags, typos, partial names and titles without their article after the
    rest ("write" is no typo of Writer where "tupac" names Tupac Shakur), then matched length
    and the popularity prior together (:func:`_lone_strength`): "enthiran" before "primary",
    "peru" (69 facts) before the film "Speak" (2). ``group`` holds the readings of the mention
    whose best reading ``cand`` is (None for a full-text hit of no mention); a partial name loses
    :data:`SHARING_WEIGHT` per e-fold of the partial readings there, the names its word is part
    of ("crabtree" of one, "college" of dozens)."""
    if group is None:
        return (True, False, False, False, -cand.score)
    match = group[0]
    relational, not_proper, weak, weakness = _lone_key(match, cand.name)  # weakness: -strength
    if match.kind == "partial":
        weakness += SHARING_WEIGHT * math.log(sum(m.kind == "partial" for m in group))
    return (False, relational, not_proper, weak, weakness)


def _lone_key(match: Match, name: str) -> tuple[bool, bool, bool, float]:
    """How lone words rank among themselves, best first: not a relation word, a proper
    ``name``, no weak reading (:func:`_weak_reading`), then :func:`_lone_strength`."""
    return (match.span.relational, not is_proper(name), _weak_reading(match), -_lone_strength(match))


def _weak_reading(match: Match) -> bool:
    """A typo, a partial name, or a title without its article ("people speak"): ranked after
    whole names among lone words."""
    return match.kind in ("typo", "partial") or title_without_article(match)


def _lone_strength(match: Match) -> float:
    """The popularity prior (:func:`prior`, which weighs the match quality too) plus
    :data:`LONE_LENGTH_WEIGHT` times the matched length (normalised characters times quality).

    Why both: a lone lower-case word is as likely a common word some title bears ("speak",
    "primary", "words") as the topic. A longer word is the rarer one, so likelier a name
    ("enthiran" over "primary" in MetaQA), and of two words of a length the better connected
    entity is the likelier topic ("peru" over the film "Speak", "utah" over "timezone" read as
    Time).
    """
    return prior(match) + LONE_LENGTH_WEIGHT * len(match.span.norm) * match.quality


def lone_word_rank(cand: LinkedEntity) -> tuple[bool, bool, float]:
    """Order of candidates when the question names nothing but lone words: whole-name matches
    before partial full-text hits ("what films are about mathematics": the tag, not a title with
    "films" and "about" in it), a proper name in the KB first ("surogates" -> Surrogates over the
    tag "director"), then matched length."""
    return (cand.method == "fulltext", not is_proper(cand.name), -len(cand.mention) * cand.score)
