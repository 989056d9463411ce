"""Train-free plan scores: a plan's relations, named in words, matched with the question's words.

On a graph nobody labelled there is no trained planner, but relation names are words too
("directed_by", "plays_in_club", "location.country.languages_spoken"), and the embedding model
already puts "directed" near "directed by" and "club" near "plays in club". So each step of a
plan is matched with a run of the question's words outside the topic mention (adjacent content
words, "release years": one thing named, so one step), each run at most once, a run matching a
relation as its best word does, and a plan scores the sum over its steps of (match -
:data:`STEP_COST`): a step pays for itself only where the question has a word for it, which is
what decides the plan's length ("who directed cast away" has one such word, "where is the club X
plays for" two).

Matches are centred per word over the subgraph's relations: a word such as "film" is about as
close to every MetaQA relation and should decide none. Function words carry no relation
(``_FUNCTION_WORDS``, a general English closed-class list), except "when" and "where", which do
(a date, a place). Runs keep "release years" from paying for two steps (there and back over
RELEASE_YEAR), but also make "share writers" one step where MetaQA means two (measured in
docs/decisions.md); a walk back that ends a plan takes no word at all ("released in which
years"), and one without a word is paid for by a sharing word ("same", "also", "co-"). Where
the question has one topic, a plan whose steps take their words in the order they stand outward
from its mention earns :data:`ORDER_BONUS` a pair ("who directed the movies written by the writer
of X" walks written-by, back, then directed-by; the nation of X's couple is the couple's). The
whole question's fit with the plan's relation names together (:func:`plan_fit`) adds a little:
what a word names too weakly to pay for its step. English grammar says more where nouns chain
through "of" and "'s" to the topic ("the nation of X's parent", "X's parent's sex"): each noun
is a step, so in a chain of two or more each earns :data:`CHAIN_BONUS` (``QuestionRuns.chained``);
a phrase the graph's relation names hold ("place of birth", :func:`relation_phrases`) is one,
and a compound is read as its head where that begins as a relation name's word does
("screenwriter" as "writer", :func:`compound_head`). Freebase spells a fact of several parts
as two steps through a nameless mediator ("film starring" to a performance, then "performance
actor"): a step into one is free where the question has no word of its own for it, so "who
played Z in Y" walks through the performance to its actor instead of stopping at it. "where"
or "when" asking of a clause about the topic ("where did X go to college") is read on the
step another word names, as what that step reaches, paying for no step of its own, so the plan
stops at the college instead of walking on to its town (``QuestionRuns.asks``); it takes a step
only in a plan none of whose steps another word names.
:data:`STEP_COST` was chosen on the training parts of MetaQA 1-hop and WorldCup2014 WC-P2, and
its rise on subgraphs of many relation types (:func:`step_cost`) on WebQSP-evidence's
(docs/decisions.md); nothing here reads a benchmark.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import ClassVar

import torch
from torch import Tensor

from kgqa.embed.protocol import Embedder
from kgqa.link.tokens import ASKING_WORDS
from kgqa.names import normalise_name, relation_text
from kgqa.retrieval.features import PreparedQuestion

#: What a plan step must match beyond to raise the plan's score (cosine, centred per word), on a
#: subgraph of at most :data:`FEW_RELATIONS` relation types; more raise it (:func:`step_cost`).
STEP_COST = 0.25
#: Relation types a subgraph may hold with a step costing :data:`STEP_COST`.
FEW_RELATIONS = 16
#: What each doubling of a subgraph's relation types beyond :data:`FEW_RELATIONS` adds to the
#: step cost. Chosen on WebQSP-evidence's training part (0.03 / 0.05 / 0.08 / 0.10 / 0.13: 386 /
#: 392 / 397 / 398 / 399 of 603 train-free, 372 at 0), the smallest of the plateau.
COST_PER_DOUBLING = 0.08
#: What a word of a possessive chain of two or more nouns adds to its matches (``QuestionRuns.chained``):
#: such a word names a step even where it names its relation weakly ("sex", "nation"). Chosen on the
#: training parts of MetaQA, PathQuestion and WorldCup2014 (0.15 / 0.2 / 0.3, docs/decisions.md).
CHAIN_BONUS = 0.2
#: Score scale before the softmax over plans: cosine gaps of a few hundredths become clear odds.
SHARPNESS = 20.0
#: English function words: no relation is named by them ("when" and "where" are left out).
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for by with from and or is are was were be been being do does did "
    "who whom whose what which why how that this these those it its his her their them they he "
    "she i you we me my your our us as there here than then into out up about can could "
    "would should will shall may might must has have had not no".split()
)
_WORD = re.compile(r"[^\W\d_][\w'-]*")
#: A run between one of these and a topic's mention names the topic's kind ("the film Cast Away",
#: "the actor X"), not a relation.
_ARTICLES = frozenset({"the", "a", "an"})
#: English words that say the answers share something with the topic ("films with the same
#: director as X", "who co-starred with X"): a walk there and back over one relation.
_SHARING_WORDS = frozenset("same share shares shared sharing together also fellow alongside".split())
#: What a cued walk back earns: its step cost back, and this much more, so the walk there and back
#: beats the walk there alone where the question says "same" or "co-".
SHARING_BONUS = 0.05
#: What a plan earns per pair of its steps whose words stand in the order the steps are walked
#: (outward from the topic): a tie-breaker between plans naming the same words.
ORDER_BONUS = 0.05
#: Weight of the whole question's fit with a plan's relation names (:func:`plan_fit`) beside
#: the word matches: chosen on the training parts of MetaQA, PathQuestion and WorldCup2014, where
#: 0.1 raised PathQuestion and MetaQA 2/3-hop and lowered none (0.15 and more cost MetaQA).
PLAN_FIT_WEIGHT = 0.1
#: Kinds of sharing cue a word run holds (:meth:`NameMatchPlanner.sharing_cues`): none; one bound
#: to the run's other words ("same director": the walk back after the step that took the run
#: earns); one standing alone ("also", "co-starred": any walk back earns).
NO_CUE, BOUND_CUE, FREE_CUE = 0, 1, 2


def find_mention(question: str, mentions: Sequence[str]) -> re.Match[str] | None:
    """Where in ``question`` the first of ``mentions`` that occurs in it stands, regardless of
    case (a question typed in lower case still names its topic), or else the first that the
    question names in part (:func:`_named_in_part`), or None."""
    for mention in mentions:
        found = re.search(re.escape(mention), question, flags=re.IGNORECASE) if mention else None
        if found is not None:
            return found
    for mention in mentions:
        found = _named_in_part(question, mention) if mention else None
        if found is not None:
            return found
    return None


_QUESTION_WORD = re.compile(r"[^\s?!,;:\"()]+")


def _named_in_part(question: str, name: str) -> re.Match[str] | None:
    """The longest run of ``question``'s words that are all words of ``name`` (case, accents and
    punctuation aside, a possessive "'s" allowed), from and to a content word: "martin luther
    king" of Martin Luther King, Jr., "michael buble" of Michael Bublé, "obama" of Barack Obama.

    Why: a topic given by its id or full name (an eval file's ``q_entity``, ``--topic``) is often
    typed short of it, and the linker, which finds the topic in the question's text, returns the
    words it read; without them the planner's views and the name match read the topic's words as
    the question's own, and a checkpoint learnt from given topics meets other views when its
    topics come from the text."""
    words = set(normalise_name(name).split())
    best: tuple[int, int] | None = None
    run: list[tuple[re.Match[str], str]] = []  # the run's tokens, each with its first word
    for token in [*_QUESTION_WORD.finditer(question), None]:
        token_words = normalise_name(token.group()).split() if token is not None else []
        if token is not None and token_words and set(token_words) <= words | {"s"}:
            run.append((token, token_words[0]))
            continue
        while run and not is_content_word(run[-1][1]):
            run.pop()
        while run and not is_content_word(run[0][1]):
            run.pop(0)
        if run and (best is None or run[-1][0].end() - run[0][0].start() > best[1] - best[0]):
            best = (run[0][0].start(), run[-1][0].end())
        run = []
    if best is None:
        return None
    return re.compile(re.escape(question[best[0] : best[1]])).search(question, best[0])


def content_words(question: str, mentions: Sequence[str]) -> list[str]:
    """The question's runs of adjacent content words outside the topics' mentions, lower case, in
    order: words of three letters or more that are not function words, joined by a space
    while no function word or mention stands between them (a possessive "'s" ends a run).

    A run between an article and a mention is left out too: it says what the topic is ("the
    film Cast Away starred which actors"), not where to walk.

    >>> content_words("What were the release years of the films Tom Hanks acted in?", ["Tom Hanks"])
    ['release years', 'acted']
    """
    return [run.text for run in _runs(question, mentions)]


#: Nouns that frame a question rather than name a step ("what is the name of the wife of X").
_FRAME_NOUNS = frozenset({"name", "names"})
#: Copulas of a question's clause ("what films were directed by X").
COPULAS = frozenset({"is", "are", "was", "were"})
_PLACE_AND_TIME = frozenset({"where", "when"})
_POSSESSIVE = re.compile(r"(?<=\w)'s\b")


@dataclass(frozen=True, slots=True)
class _Run:
    words: tuple[str, ...]
    distance: int  # words from the nearest mention
    chained: bool  # a noun of a possessive chain that ends at a mention
    shares: int = 0  # the sharing cue its place gives: NO_CUE, BOUND_CUE or FREE_CUE
    kind: bool = False  # the noun of "what kind of N is" + a mention

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True, slots=True)
class QuestionRuns:
    """A question's distinct word runs, read once, with their flags in the same order.

    Attributes:
        words: the distinct :func:`content_words` runs, each as its words, nearest to a topic's
            mention first (words between them): what :class:`WordVectors` embeds and
            :meth:`NameMatchPlanner.sharing_cues` reads, a compound read as its head where it
            has one (:func:`compound_head`). The order is the order a plan's steps
            are named in, outward from the topic ("the nation of X's couple": couple, then
            nation). A word said twice in a possessive chain is two runs ("X 's daughter 's
            daughter": two steps); said again outside the chain it is the chain's ("the director
            of X is also the director of"). A run standing inside a longer one is dropped: "which
            date was the release date of X" names one step, not a walk there and back.
        chained: per run, whether it is a noun of a possessive chain of two or more that ends at
            a topic's mention: "the nation of X 's parent", "X 's parent 's sex", "what sex is X
            's dad" chain two nouns each, so each names a step of its own; a leading "where" or
            "when" is a link too ("where did X 's son die": the place of the son's death), and so
            is a verb between "who"/"what" and the mention ("who directed X 's films"). One noun
            alone ("the director of X") says no more than its match does, and is not marked. A
            frame noun ("the name of") is never chained.
        shares: per run, the sharing cue its place in the question gives without a sharing word
            (:data:`NO_CUE` elsewhere): :data:`BOUND_CUE` for a participle whose agent is "the N
            of" the topic, where its noun is the answer ("movies directed by the director of
            Jaws", "which films were written by the writer of X": they share the topic's
            director or writer), and for "who V with" the topic ("who acted with Tom Hanks": his
            co-stars); :data:`FREE_CUE` for the verb of "what N did the M of X V" ("what films did
            the director of Titanic make": the director's films, whatever the verb) and for a noun
            with no participle before "by the M of" ("films by the writer of X": what they share
            is what "writer" names, not "films"); :data:`BOUND_CUE` too for the run after "share"
            and an article ("which movies share a director with X", the verb leaving its run).
            Not where other words ask on from those films ("what types are the films directed
            by the director of X").
        kinds: per run, whether it names a class rather than surely a step, and so words a step
            only where it names the relation beyond :data:`STEP_COST`: the noun N of "what kind
            of N is X" (an "of", one noun, a copula, the mention), which may name the answers'
            class ("what type of religion is X") or the topic's ("what kind of film is X", where
            "film" leans to directed-by); and the noun of a "which N" ending the question after
            the mention ("the director of X also directed which movies", where "movies" would pay
            for a third step; "X's films were released in which years" still walks release year),
            and the N of "what N did the M of X V" ("what films did the writer of X also write":
            the writer's films, not a third step from them that "films" would pay for).
        asks: per run, whether it is the question word "where" or "when" alone, outside a
            possessive chain, opening a question that asks of a clause about the topic
            (:func:`_asks_of_the_topic`): it says what the answers are (a place, a time) rather
            than naming a step of its own, and is read on the plan's last step
            (:meth:`NameMatchPlanner.plan_logits`).
    """

    words: list[list[str]]
    chained: list[bool]
    shares: list[int]
    kinds: list[bool]
    asks: list[bool]


def question_runs(
    question: str,
    mentions: Sequence[str],
    phrases: Collection[str] = (),
    relation_words: Collection[str] = (),
    known_words: Collection[str] = (),
) -> QuestionRuns:
    """The :class:`QuestionRuns` of ``question`` around the topics' ``mentions`` (a word phrase
    "A of B" among ``phrases`` is one word: "place of birth"; a compound of two ``known_words``
    whose head begins as one of ``relation_words`` does is read as that head,
    :func:`compound_head`)."""
    runs = _runs(question, mentions, phrases)
    runs = [run for run in runs if not any(_inside(run.words, other.words) for other in runs)]
    asking = _asks_of_the_topic(question, mentions)
    words_of = {run.text: run.words for run in runs}
    shares: dict[str, int] = {}
    kinds: dict[str, bool] = {}
    for run in runs:
        shares[run.text] = max(shares.get(run.text, NO_CUE), run.shares)
        kinds[run.text] = kinds.get(run.text, True) and run.kind
    in_a_chain = {run.text for run in runs if run.chained}
    nearest: dict[tuple[str, int], int] = {}
    for run in runs:
        if run.text in in_a_chain and not run.chained:
            continue
        key = (run.text, run.distance if run.chained else -1)
        nearest[key] = min(run.distance, nearest.get(key, run.distance))
    keys = sorted(nearest, key=nearest.__getitem__)
    chains = sum(distance >= 0 for _, distance in keys) >= 2
    return QuestionRuns(
        [_with_heads(words_of[text], relation_words, known_words) for text, _ in keys],
        [chains and distance >= 0 for _, distance in keys],
        [shares[text] for text, _ in keys],
        [kinds[text] for text, _ in keys],
        [asking and _is_wh(words_of[text]) and not (chains and distance >= 0) for text, distance in keys],
    )


#: Shortest first part of a compound word, and the letters its head must share with the start of
#: a relation name's word (:func:`compound_head`).
_COMPOUND_PART, _HEAD_STEM = 4, 4


def compound_head(word: str, relation_words: Collection[str], known_words: Collection[str]) -> str | None:
    """The longest ending of ``word`` that, with the rest of it, makes two ``known_words`` (the
    rest of four letters or more, the ending of five or more) and starts with the first four
    letters of one of ``relation_words``, or None: "screenwriter" -> "writer" where a relation is
    named "written by", "highschool" -> "school" beside "institution school".

    Why: the embedding model reads a compound whole, and "screenwriter" sits nearer "starred
    actors" (0.53) than "written by" (0.44), where "writer" is 0.57 to written-by and 0.31 to
    starred-actors. Its head names what the compound is, so the question's word is read as the
    head alone (kept beside it, the compound still paid for a needless starred-actors step). A
    head is only looked for where the graph's own relation words begin so, and both parts must
    be words of the model's vocabulary: among Freebase's 1,331 relation words four letters alone
    read "university" as "versity" and "inventions" as "entions".
    """
    if not word.isalpha():  # "co-starred" is a prefix and a word, read as the sharing cue it is
        return None
    stems = _stems(frozenset(relation_words))
    for start in range(_COMPOUND_PART, len(word) - _HEAD_STEM):
        head = word[start:]
        if head[:_HEAD_STEM] in stems and head in known_words and word[:start] in known_words:
            return head
    return None


@cache
def _stems(relation_words: frozenset[str]) -> frozenset[str]:
    """The first :data:`_HEAD_STEM` letters of each of ``relation_words`` that long: built once
    per graph (the retriever passes one frozenset), not once per word of every question."""
    return frozenset(w[:_HEAD_STEM] for w in relation_words if len(w) >= _HEAD_STEM)


def relation_name_words(relation_names: Iterable[str]) -> frozenset[str]:
    """The content words of relation names as :func:`~kgqa.names.relation_text` reads them, lower
    case: ``written_by`` gives "written", ``people.person.place_of_birth`` "person", "place",
    "birth"."""
    words = (w for name in relation_names for w in relation_text(name).lower().split())
    return frozenset(w for w in words if is_content_word(w))


def _with_heads(
    words: Sequence[str], relation_words: Collection[str], known_words: Collection[str]
) -> list[str]:
    """``words`` with each compound read as its head (:func:`compound_head`)."""
    return [compound_head(w, relation_words, known_words) or w for w in words]


def _inside(words: Sequence[str], longer: Sequence[str]) -> bool:
    """Whether ``words`` stand together inside the longer run ``longer`` ("date" in "release date")."""
    n, key = len(words), tuple(words)
    return len(longer) > n and any(tuple(longer[i : i + n]) == key for i in range(len(longer) - n + 1))


def is_content_word(word: str) -> bool:
    """Whether ``word`` (lower case) can name a relation: three letters or more, no function word."""
    return len(word) > 2 and word not in _FUNCTION_WORDS


def around_mentions(question: str, mentions: Sequence[str]) -> list[str]:
    """The text of ``question`` between its topics' ``mentions``, in order: each mention's first
    occurrence cut out (:func:`find_mention`; "_" read as a space, so ids such as Alan_PULIDO are
    mentioned either way), one piece more than the mentions found."""
    pieces = [question.replace("_", " ")]
    for mention in mentions:
        for i, piece in enumerate(pieces):
            found = find_mention(piece, [mention.replace("_", " ")])
            if found is not None:
                pieces[i : i + 1] = [piece[: found.start()], piece[found.end() :]]
                break
    return pieces


def _runs(question: str, mentions: Sequence[str], phrases: Collection[str] = ()) -> list[_Run]:
    """:func:`content_words`' runs in order, each with its distance and chain mark; a word
    phrase "A of B" among ``phrases`` is one word ("place of birth")."""
    pieces = around_mentions(question, mentions)  # every topic's: "for country Germany" names no relation
    runs: list[_Run] = []
    subject = before_ends_in_of = False
    for i, piece in enumerate(pieces):
        words = [w.lower().strip("'-") for w in _WORD.findall(_POSSESSIVE.sub(" 's", piece))]
        words = _joined(words, phrases)
        mention_before, mention_after = i > 0, i < len(pieces) - 1
        chain_ends = _chain_before_mention(words) if mention_after else set()
        chain_starts = _chain_after_mention(words) if mention_before else set()
        if i == 1 and before_ends_in_of and _participle_noun(words):
            chain_starts.add(0)  # "the release dates of X starred movies": X's starred movies
        agent_end = _agent_before_mention(words) if mention_after and i == 0 else None
        partner_end = _partner_before_mention(words) if mention_after and i == 0 else None
        if i == 0:
            subject = mention_after and _subject_before_mention(words)
            before_ends_in_of = bool(chain_ends) and _before_the_noun_of(words) is not None
        # "what films did the director of X make": the verb alone after the mention
        verb_at = 0 if i == 1 and subject and words and all(map(is_content_word, words)) else None
        # The possessive's "s" stands between nothing: "X's wife" is as near as "wife of X".
        counted = [int(w != "s") for w in words]
        start = None
        shared_next = False  # the run before ended in "share" + an article: this one is what is shared
        for k, word in enumerate([*words, ""]):
            if is_content_word(word):
                start = k if start is None else start
                continue
            if start is None:
                continue
            names_topic = mention_after and k == len(words) and start > 0 and words[start - 1] in _ARTICLES
            if not names_topic:  # "the film" + a mention
                gaps = ([sum(counted[:start])] if mention_before else []) + (
                    [sum(counted[k:])] if mention_after else []
                )
                chained = (start in chain_starts or k in chain_ends) and words[start] not in _FRAME_NOUNS
                shares = NO_CUE
                if k == agent_end and _names_the_answer(words[:start]):
                    # "films by the writer of X": no participle names what is shared; the chain's noun does
                    shares = BOUND_CUE if any(map(_is_participle, words[start:k])) else FREE_CUE
                elif k == partner_end:
                    shares = BOUND_CUE
                elif start == verb_at:
                    shares = FREE_CUE
                elif shared_next:
                    shares = BOUND_CUE
                kind = (
                    _asked_last(words, start, k, mention_before)
                    or (mention_after and _kind_noun(words, start, k))
                    or (subject and start == 1)  # the N of "what N did the M of X V"
                )
                end, shared_next = k, _shares_the_next(words, start, k)
                if shared_next:  # "which movies share a director with X": the cue is the director's
                    end -= 1
                run = _Run(tuple(words[start:end]), min(gaps, default=len(words)), chained, shares, kind)
                if (k == agent_end and shares or k == partner_end and words[0] in ASKING_WORDS) and runs:
                    # "which films were directed by": the films'; "which actors have worked with"
                    run = replace(run, words=runs.pop().words + run.words)
                runs.append(run)
            start = None
    return runs


#: Forms of "share" whose object, after an article, is what the answers share with the topic.
_SHARE_VERBS = frozenset({"share", "shares", "shared"})


def _shares_the_next(words: Sequence[str], start: int, end: int) -> bool:
    """Whether the run ``words[start:end]`` is a noun and "share" with an article and a word next
    ("movies share a director", "films share the screenwriter"): the verb's cue belongs to that
    next word, not to the run it ends."""
    return (
        end - start > 1
        and words[end - 1] in _SHARE_VERBS
        and end + 1 < len(words)
        and words[end] in _ARTICLES
        and is_content_word(words[end + 1])
    )


def _joined(words: list[str], phrases: Collection[str]) -> list[str]:
    """``words`` with each "A of B" that is one of ``phrases`` made one word."""
    if not phrases:
        return words
    out: list[str] = []
    i = 0
    while i < len(words):
        phrase = " ".join(words[i : i + 3])
        if i + 2 < len(words) and words[i + 1] == "of" and phrase in phrases:
            out.append(phrase)
            i += 3
        else:
            out.append(words[i])
            i += 1
    return out


def relation_phrases(relation_names: Iterable[str]) -> frozenset[str]:
    """The "A of B" phrases inside relation names, lower case: ``place_of_birth`` and
    ``people.person.place_of_birth`` give "place of birth". A question's "place of birth" is one
    step, not a chain of two nouns (``QuestionRuns.words``)."""
    phrases = set()
    for name in relation_names:
        words = relation_text(name).lower().split()
        for i in range(1, len(words) - 1):
            before, after = words[i - 1], words[i + 1]
            if words[i] == "of" and before not in _FUNCTION_WORDS and after not in _FUNCTION_WORDS:
                phrases.add(f"{before} of {after}")
    return frozenset(phrases)


def _participle_noun(words: Sequence[str]) -> bool:
    """Whether the words after a mention are a participle and its noun ("starred movies", "written
    films"), the end of "the N of X V-ed M": X's M; not a verb ("where did the wife of X die") nor
    other words ("the capital of spain wiki answers")."""
    return len(words) == 2 and all(map(is_content_word, words)) and _is_participle(words[0])


def _kind_noun(words: Sequence[str], start: int, end: int) -> bool:
    """Whether the run ``words[start:end]`` before a mention is the one noun of "what kind of N
    is": an "of" before it, a copula after it, and the mention next."""
    return 0 < start == end - 1 == len(words) - 2 and words[start - 1] == "of" and words[end] in COPULAS


def _asked_last(words: Sequence[str], start: int, end: int, mention_before: bool) -> bool:
    """Whether the run ``words[start:end]`` after a mention is the noun of a "which N" that ends
    the question ("the screenwriter of X also wrote which movies")."""
    return mention_before and end == len(words) and start > 1 and words[start - 1] in ASKING_WORDS


def _is_participle(word: str) -> bool:
    """Whether ``word`` reads as a past participle ("directed", "written"); irregular ones
    ("made", "sung") are missed."""
    return word.endswith(("ed", "en"))


def _participle_chain(words: Sequence[str]) -> set[int]:
    """Where the two runs of "R the N V-ed by" end, when the words before a mention end so ("who
    acted in the films directed by", "what types are the films written by"): the films are the
    topic's, and R asks on from them."""
    j = len(words) - 1
    if j < 1 or words[j] != "by":
        return set()
    start = j
    while start > 0 and is_content_word(words[start - 1]):
        start -= 1
    t = start
    while t > 0 and words[t - 1] in _ARTICLES:
        t -= 1
    if (
        start == j
        or t == start
        or t < 2
        or is_content_word(words[t - 1])
        or not is_content_word(words[t - 2])
    ):
        return set()
    return {j, t - 1}


def _chain_before_mention(words: Sequence[str]) -> set[int]:
    """Where the runs of the chain before a mention end: "what is the nation of the parent of"
    (nation, parent), "what sex is" (what "the sex of" asks), "where did", and the verb of
    "who directed" where no "of" comes before the mention."""
    ends = _participle_chain(words)
    if ends:
        return ends
    k = len(words)
    while True:
        while k > 0 and words[k - 1] in _ARTICLES:
            k -= 1
        if k == 0 or words[k - 1] != "of":
            break
        k -= 1
        while k > 0 and words[k - 1] in _ARTICLES:
            k -= 1
        end = k
        while k > 0 and is_content_word(words[k - 1]):
            k -= 1
        if k == end:
            break
        ends.add(end)
    if k > 2 and words[k - 1] in COPULAS and words[0] in ASKING_WORDS:
        if all(is_content_word(w) for w in words[1 : k - 1]):
            ends.add(k - 1)
    if k > 0 and words[0] in _PLACE_AND_TIME and not any(is_content_word(w) for w in words[1:k]):
        ends.add(1)  # "where did X 's son die" asks for "the place of X 's son's death"
    if not ends and k > 1 and words[0] in ASKING_WORDS | {"who"}:
        if all(is_content_word(w) for w in words[1:k]):
            ends.add(k)  # "who directed X 's films": the films' directors
    return ends


def _is_wh(words: Sequence[str]) -> bool:
    """Whether a run is "where" or "when" alone."""
    return len(words) == 1 and words[0] in _PLACE_AND_TIME


def _asks_of_the_topic(question: str, mentions: Sequence[str]) -> bool:
    """Whether ``question`` opens with "where" or "when" and then an auxiliary ("where did X go to
    college") or a copula and, past an article, a topic's mention ("where was X born", "where is
    the Y located"): there the word asks what the clause about the topic reaches, a place or a
    time, and names no step of its own (``QuestionRuns.asks``). Not "where is the club that X
    plays for", which asks where that club is: a step on from it."""
    pieces = around_mentions(question, mentions)
    if len(pieces) < 2:
        return False
    words = [w.lower() for w in _WORD.findall(pieces[0])]
    if len(words) < 2 or words[0] not in _PLACE_AND_TIME:
        return False
    if words[1] in AUXILIARIES:
        return True
    return words[1] in COPULAS and all(w in _ARTICLES for w in words[2:])


def _names_the_answer(before: Sequence[str]) -> bool:
    """Whether the words before a participle leave its noun the answer: nothing ("movies
    directed by"), or "which"/"what", a noun and a copula ("which films were directed by"), not
    "what types are the films directed by"."""
    rest = list(before)
    if rest and rest[0] in ASKING_WORDS:
        rest = rest[1:]
        while rest and is_content_word(rest[0]):
            rest = rest[1:]
        if rest and rest[0] in COPULAS:
            rest = rest[1:]
    return not rest


#: Auxiliaries of a question's verb ("what films did the director of X make").
AUXILIARIES = frozenset({"did", "does", "do", "has", "have", "had"})


def _before_the_noun_of(words: Sequence[str]) -> int | None:
    """Where "the N of" (articles optional) that ends ``words`` starts, or None."""
    k = len(words)
    while k > 0 and words[k - 1] in _ARTICLES:
        k -= 1
    if k == 0 or words[k - 1] != "of":
        return None
    k -= 1
    while k > 0 and is_content_word(words[k - 1]):
        k -= 1
    while k > 0 and words[k - 1] in _ARTICLES:
        k -= 1
    return k


def _subject_before_mention(words: Sequence[str]) -> bool:
    """Whether the words before a mention are "what/which N did the M of": the answer is what "the
    M of" the topic did, named by the verb after the mention."""
    k = _before_the_noun_of(words)
    if k is None or k < 3 or words[k - 1] not in AUXILIARIES or words[0] not in ASKING_WORDS:
        return False
    return all(is_content_word(w) for w in words[1 : k - 1])


def _partner_before_mention(words: Sequence[str]) -> int | None:
    """Where the verb of "who V with" ends, when the words before a mention are that ("who acted
    with": the people who acted beside the topic, not the topic's films), the question word "which"
    or "what" with its noun and an auxiliary too ("which actors have worked with")."""
    k = len(words)
    if (
        k > 2
        and (words[0] == "who" or words[0] in ASKING_WORDS)
        and words[-1] == "with"
        and is_content_word(words[-2])
        and all(is_content_word(w) or w in AUXILIARIES for w in words[1:-1])
    ):
        return k - 1
    return None


def _agent_before_mention(words: Sequence[str]) -> int | None:
    """Where the run before "by the N of" ends, when the words before a mention end so ("movies
    directed by the director of"): the run's participle has the chain's noun as its agent."""
    k = _before_the_noun_of(words)
    if (
        k is not None
        and k > 1
        and words[k - 1] == "by"
        and is_content_word(words[k - 2])
        and k < len(words) - 1
    ):
        return k - 1
    return None


def _chain_after_mention(words: Sequence[str]) -> set[int]:
    """Where the runs of the chain after a mention start: "'s parent 's sex" (parent, sex)."""
    starts: set[int] = set()
    k = 0
    while k < len(words) and words[k] == "s":
        k += 1
        start = k
        while k < len(words) and is_content_word(words[k]):
            k += 1
        if k == start:
            break
        starts.add(start)
    return starts


class WordVectors:
    """The embeddings of questions' words (``QuestionRuns.words``), each word encoded alone and kept.

    Alone: a text's vector moves in the third decimal with the batch it is encoded in, so a word
    encoded beside its question's other words would differ from question to question, and a
    kept vector would make answers depend on the order the questions came in. Kept: questions
    repeat their words (MetaQA 2-hop: 991 words, 44 distinct, in 300 questions), so encoding
    them stops costing ~2.5 ms a question. At :data:`MAX_WORDS` the store starts afresh (a
    long-running process meets new words without end).
    """

    MAX_WORDS: ClassVar[int] = 100_000

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._vectors: dict[str, Tensor] = {}

    def __call__(self, runs: Sequence[Sequence[str]]) -> Tensor:
        """FloatTensor [U, K, d]: the vectors of the words of ``runs``, one row per run,
        zero-padded to the longest run's K words (U may be 0)."""
        if not runs:
            return torch.zeros(0, 1, self.embedder.dimension)
        words = dict.fromkeys(w for run in runs for w in run)
        if len(self._vectors) + len(words) > self.MAX_WORDS:
            self._vectors.clear()
        for word in words:
            if word not in self._vectors:
                self._vectors[word] = self.embedder.embed([word])[0]
        units = torch.zeros(len(runs), max(len(run) for run in runs), self.embedder.dimension)
        for u, run in enumerate(runs):
            for k, word in enumerate(run):
                units[u, k] = self._vectors[word]
        return units


@dataclass(frozen=True, slots=True)
class NameMatchConfig:
    """What :func:`~kgqa.retrieval.models.plans.rank_plans` reads of a planner's config."""

    max_steps: int = 3


class NameMatchPlanner:
    """A planner with nothing to train: :meth:`plan_logits` as the trained planners have, from
    :func:`word_matches` of ``prepared.run_words``, the embeddings of the question's
    ``QuestionRuns.words`` (:class:`WordVectors`) with what else it says of them (``WordRuns``).
    """

    KIND: ClassVar[str] = "name_match"

    def __init__(self, config: NameMatchConfig | None = None) -> None:
        self.config = config or NameMatchConfig()

    def eval(self) -> NameMatchPlanner:
        return self

    def checkpoint(self) -> dict[str, str]:
        """The checkpoint entry that names this planner (it has no weights): what ``kgqa train``
        writes for a checkpoint trained on questions made from the graph alone."""
        return {"kind": self.KIND}

    @staticmethod
    def sharing_cues(runs: Sequence[Sequence[str]], shares: Sequence[int] = ()) -> Tensor:
        """LongTensor [U]: per run of :class:`WordVectors`, the sharing cue it holds (sharing
        words: "same", "share", "together", "also", ..., and words made with "co-"):
        :data:`FREE_CUE` where it holds nothing else ("also", "co-starred"), :data:`BOUND_CUE`
        where it holds other words too ("same director": the thing shared), else :data:`NO_CUE`;
        or the cue ``shares`` gives it where that is stronger (``QuestionRuns.shares``: "movies
        directed by the director of X")."""
        kinds = []
        for u, run in enumerate(runs):
            sharing = [w in _SHARING_WORDS or w.startswith("co-") for w in run]
            kind = FREE_CUE if all(sharing) else BOUND_CUE if any(sharing) else NO_CUE
            kinds.append(max(kind, shares[u] if u < len(shares) else NO_CUE))
        return torch.tensor(kinds, dtype=torch.long)

    def plan_logits(self, prepared: PreparedQuestion, relation_emb: Tensor, steps: Tensor) -> Tensor:
        """Logits [P]: :data:`SHARPNESS` x the best sum over a plan's steps of (its relation's match
        with a distinct question word - the step cost, :func:`step_cost` of the subgraph's relation
        types); a step left without a word matches 0, a walk back that ends the plan takes no word,
        and one cued by the question's sharing words (``WordRuns.sharing_cues``) earns
        :data:`SHARING_BONUS`, and with one topic a plan earns :data:`ORDER_BONUS` per pair of steps
        whose words stand outward from it in the order walked (:func:`best_assignment`); plus
        :data:`PLAN_FIT_WEIGHT` x the whole question's fit with the plan's relation names together
        (:func:`plan_fit`). A word of a possessive chain (``WordRuns.chained``) matches
        :data:`CHAIN_BONUS` higher; a class noun (``WordRuns.kinds``) matches 0 where below the step
        cost. A step into a nameless mediator (``prepared.mediators``) and the step out of it are
        named as one relation where one word names them. An asking "where" / "when"
        (``WordRuns.asks``) is read beside the other words, adding its match with the plan's last
        relation and paying for no step, where another word names a step of the plan, and then only
        where another word names that last step too ("where was elvis costello born" asks for the
        place of birth, not the place around it); in a plan no other word names a step of, it is
        read either way, whichever scores the plan higher: as a word taking a step, or beside the
        others."""
        runs = prepared.run_words
        if runs is None:
            raise ValueError("NameMatchPlanner needs prepared.run_words (its word vectors)")
        relations = (
            len(prepared.subgraph.relation_types) if runs.relation_count is None else runs.relation_count
        )
        cost = step_cost(relations)
        matches = word_matches(relation_emb, runs.vectors)
        if runs.chained is not None:
            matches = matches + CHAIN_BONUS * runs.chained.to(matches.dtype)
        if runs.kinds is not None:
            matches = matches.masked_fill(runs.kinds & (matches < cost), 0.0)
        cues = runs.sharing_cues
        ordered = prepared.subgraph.num_topics == 1
        through = None if prepared.mediators is None else steps_through_mediators(prepared.mediators, steps)
        assigned = best_assignment(matches, steps, cost, cues, ordered=ordered, through=through)
        if runs.asks is not None and bool(runs.asks.any()):
            # "where did X die": "where" says that the answers are places on the step "die"
            # names, paying for no step of its own (a place's place is a place too)
            others = matches[:, ~runs.asks]
            alongside = best_assignment(
                others,
                steps,
                cost,
                None if cues is None else cues[~runs.asks],
                ordered=ordered,
                through=through,
            )
            last = last_steps(steps).clamp(min=0) // 2
            asking = matches[:, runs.asks].sum(dim=1)[last]
            # the relations another word names; a plan with a step among them is that word's
            named = (others >= cost).any(dim=1)
            told = (named[steps.clamp(min=0) // 2] & (steps >= 0)).any(dim=1)
            assigned = torch.where(
                told,
                alongside + asking * named[last].to(asking.dtype),
                torch.maximum(assigned, alongside + asking),
            )
        return SHARPNESS * (assigned + PLAN_FIT_WEIGHT * plan_fit(prepared.question_emb, relation_emb, steps))


def step_cost(num_relations: int) -> float:
    """What a plan step must match beyond on a subgraph of ``num_relations`` relation types:
    :data:`STEP_COST`, plus :data:`COST_PER_DOUBLING` per doubling beyond :data:`FEW_RELATIONS`.

    Why: a word's match with a step is its best over the subgraph's relations, and the best of
    many is higher by chance. Among Freebase's hundreds of near-synonymous relations every word
    finds one above the cost ("what language do people in jamaica speak": "language", "people"
    and "speak" each name a human-language relation), so plans walk on past the answer; a
    WebQSP-evidence subgraph holds 33 relation types at the median and 216 at the 90th
    percentile, MetaQA's, PathQuestion's and WorldCup2014's at most about a dozen. On
    WebQSP-evidence's training part, train-free Hit@1 372 -> 397 of 603 and the trained fold
    checkpoints (through the name prior) 453 -> 457; the other graphs' tuning parts unchanged
    (docs/decisions.md).
    """
    return STEP_COST + COST_PER_DOUBLING * max(0.0, math.log2(max(num_relations, 1) / FEW_RELATIONS))


def last_steps(steps: Tensor) -> Tensor:
    """LongTensor [P]: each plan's last signed step (``steps`` as in :func:`best_assignment`)."""
    last = (steps >= 0).sum(dim=1, keepdim=True).clamp(min=1) - 1
    return steps.gather(1, last).squeeze(1)


def plan_fit(question_emb: Tensor, relation_emb: Tensor, steps: Tensor) -> Tensor:
    """FloatTensor [P]: per plan, the cosine of the question's embedding (``question_emb`` [d])
    with the sum of its steps' relation name embeddings (``relation_emb`` [R, d], ``steps`` as
    in :func:`best_assignment`), each normalised.

    Why: a word may name its relation below :data:`STEP_COST` ("sex" matches gender at 0.21
    in "claudius 's parent 's sex"), and then the plan stops a step short; the sentence as a
    whole still sits nearer "parents" + "gender" than "parents" alone.
    """
    names = torch.nn.functional.normalize(relation_emb, dim=-1)
    present = (steps >= 0).to(names.dtype).unsqueeze(-1)
    plans = torch.nn.functional.normalize((names[steps.clamp(min=0) // 2] * present).sum(dim=1), dim=-1)
    return plans @ torch.nn.functional.normalize(question_emb, dim=-1)


def word_matches(relation_emb: Tensor, word_emb: Tensor) -> Tensor:
    """FloatTensor [R, U]: per relation and run of words, the best over the run's words of the
    cosine of the relation's name with the word, minus that word's mean over the R relations.

    ``word_emb``: [U, K, d], runs zero-padded (a padding word matches 0, as no word does)."""
    names = torch.nn.functional.normalize(relation_emb, dim=-1)
    words = torch.nn.functional.normalize(word_emb, dim=-1)
    cosines = torch.einsum("rd,ukd->ruk", names, words)
    if not cosines.numel():
        return cosines.new_zeros(names.shape[0], word_emb.shape[0])
    return (cosines - cosines.mean(dim=0, keepdim=True)).max(dim=2).values


def steps_through_mediators(mediators: Tensor, steps: Tensor) -> Tensor:
    """BoolTensor [P, L]: per plan step (``steps`` as in :func:`best_assignment`), whether it
    walks into a nameless node (``mediators`` [2R], ``PreparedQuestion.mediators``) and the plan
    walks on out of it."""
    into = mediators[steps.clamp(min=0)] & (steps >= 0)
    into[:, :-1] &= steps[:, 1:] >= 0
    into[:, -1] = False
    return into


def best_assignment(
    matches: Tensor,
    steps: Tensor,
    cost: float,
    cues: Tensor | None = None,
    *,
    ordered: bool = False,
    through: Tensor | None = None,
) -> Tensor:
    """FloatTensor [P]: per plan, the largest sum over its steps of (match - ``cost``) where each
    step takes a distinct word or none (match 0).

    A walk back (same relation as the step before, other direction) that ends the plan takes no
    word: "films written by X released in which years" has two words for release year, and a
    third step walking it back must not be paid by the second. Inside a plan it may ("movies
    written by the writer of X" walks written-by there and back, once per word). A walk back
    without a word (the step before not itself a walk back) earns ``cost`` +
    :data:`SHARING_BONUS` where ``cues`` (LongTensor [W] of :meth:`NameMatchPlanner.sharing_cues`
    kinds) holds a :data:`FREE_CUE` ("also"), or a :data:`BOUND_CUE` whose run matches the walked
    relation best ("share directors" cues directed-by only). With ``ordered`` (the words are
    indexed outward from the one topic, ``QuestionRuns.words``) a plan earns :data:`ORDER_BONUS` per
    pair of its worded steps whose words' indices rise in walk order.

    ``through`` (BoolTensor [P, L], :func:`steps_through_mediators`) marks the steps into a
    nameless mediator that the plan walks on out of: such a step without a word costs nothing,
    and the step out takes a word for either relation (:func:`_mediated_matches`). So the pair
    named by one word ("who played Z in Y": film starring, then performance actor) pays one
    step's cost, as one relation would, and named by two ("where did X live": places lived,
    then location) pays two.

    With L steps a step's word in the best choice is among its relation's L best words (the other
    steps take at most L - 1 of them), so only those and "none" are tried: (L + 1)^L choices a
    plan, whatever the question's length.

    Args:
        matches: [R, W] from :func:`word_matches`.
        steps: LongTensor [P, L] as in :class:`~kgqa.retrieval.models.plans.Plans` (-1 past the end).
    """
    num_plans, length = steps.shape
    num_words = matches.shape[1]
    relation = steps.clamp(min=0) // 2  # [P, L]
    # Per step: its relation's best words, then "none" (match 0, an index no other step uses).
    none_index = num_words + torch.arange(length).expand(num_plans, -1).unsqueeze(-1)  # [P, L, 1]
    values = [matches.new_zeros(num_plans, length, 1)]
    indices = [none_index]
    if num_words:
        per_step = matches[relation] if through is None else _mediated_matches(matches, relation, through)
        top = torch.topk(per_step, min(length, num_words), dim=2)  # [P, L, K]
        values.insert(0, top.values)
        indices.insert(0, top.indices)
    value, index = torch.cat(values, dim=2), torch.cat(indices, dim=2)  # [P, L, K]
    choices = _choices(value.shape[2], length)  # [C, L]
    position = torch.arange(length)
    picked_value = value[:, position, choices]  # [P, C, L]
    picked_index = index[:, position, choices]
    allowed = _all_distinct(picked_index)  # [P, C]
    present = (steps >= 0).to(matches.dtype).unsqueeze(1)
    gains = picked_value - cost
    if through is not None:  # a step into a mediator without a word of its own is free
        gains += cost * (through.unsqueeze(1) & (picked_index >= num_words)).to(gains.dtype)
    if length > 1:
        back = (steps[:, 1:] >= 0) & (steps[:, 1:] == (steps[:, :-1] ^ 1))  # [P, L-1]
        # A walk back that ends the plan names nothing new ("released in which years" is one
        # step): the word for its relation paid for the step before.
        last = torch.arange(1, length) == (steps >= 0).sum(dim=1, keepdim=True) - 1  # [P, L-1]
        worded_back = (back & last).unsqueeze(1) & (picked_index[:, :, 1:] < num_words)  # [P, C, L-1]
        if cues is not None and bool((cues != NO_CUE).any()):
            back[:, 1:] &= ~back[:, :-1]  # there, back and there again is no "same X" walk
            # "the director of X also directed", "what films did the director of X make": a cue's
            # word may name a walk back that ends the plan
            cue_word = torch.cat([cues != NO_CUE, cues.new_zeros(length, dtype=torch.bool)])
            worded_back &= ~(back.unsqueeze(1) & cue_word[picked_index[:, :, 1:]])
            if bool((cues == FREE_CUE).any()):
                cued = torch.ones_like(back)
            else:  # the step before walks the relation a cue's run matches best
                cued = torch.isin(relation[:, :-1], matches[:, cues == BOUND_CUE].argmax(dim=0))
            shared = (back & cued).unsqueeze(1) & (picked_index[:, :, 1:] >= num_words)
            gains[:, :, 1:] += (cost + SHARING_BONUS) * shared.to(gains.dtype)
        allowed &= ~worded_back.any(dim=2)
    if ordered and length > 1:
        worded = (picked_index < num_words) & (steps >= 0).unsqueeze(1)  # [P, C, L]
        earlier, later = torch.triu_indices(length, length, offset=1)
        outward = picked_index[:, :, later] > picked_index[:, :, earlier]
        gains[:, :, 0] += ORDER_BONUS * (worded[:, :, earlier] & worded[:, :, later] & outward).sum(dim=2)
    totals = (gains * present).sum(dim=2).masked_fill(~allowed, float("-inf"))
    return totals.max(dim=1).values if num_plans else totals.new_zeros(0)


def _mediated_matches(matches: Tensor, relation: Tensor, through: Tensor) -> Tensor:
    """FloatTensor [P, L, W]: per plan step, its relation's matches (``matches`` [R, W],
    ``relation`` [P, L]), and for the step out of a mediator (the step after a ``through`` one)
    the better of its own and the step into it's, word by word."""
    own = matches[relation]
    out_of = torch.zeros_like(through)
    out_of[:, 1:] = through[:, :-1]
    into = matches[relation.roll(1, dims=1)]
    return torch.where(out_of.unsqueeze(-1), torch.maximum(own, into), own)


def _all_distinct(index: Tensor) -> Tensor:
    """BoolTensor [P, C]: whether the L indices of each choice differ pairwise."""
    same = index.unsqueeze(-1) == index.unsqueeze(-2)  # [P, C, L, L]
    return same.sum(dim=(-1, -2)) == index.shape[-1]


@cache
def _choices(options: int, length: int) -> Tensor:
    """LongTensor [options^length, length]: every choice of one option per step."""
    return torch.tensor(list(itertools.product(range(options), repeat=length)), dtype=torch.long).reshape(
        -1, length
    )
