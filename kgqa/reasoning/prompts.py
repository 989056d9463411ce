"""The SubgraphRAG reader prompt, in a triples form and a paths form, fitted to a token budget.

The triples form is the paper's (SubgraphRAG, section 3.2 and appendix D, Figure 7): the system
instruction, one worked example about Lou Seal (user turn with ``Triplets:`` then ``Question:``,
assistant turn that explains and ends in ``ans:`` lines), then the question to answer in the same
shape. The paper's figure heads the list ``Triples:`` while its own example answer says "From the
triplets"; we use ``Triplets:`` as the released SubgraphRAG code does. The paths form is ours: the
same example rewritten as ``e1 -> r1 -> e2 -> r2 -> e3`` lines, for ReG chains and PathRAG paths.

Evidence arrives weakest first, best last (the best lines sit next to the question, where LLMs
weigh them most), so when the budget is short the *first* lines are the ones dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kgqa.errors import ReaderError
from kgqa.reasoning.readers.protocol import Message
from kgqa.types import TokenBudget

if TYPE_CHECKING:
    from kgqa.retrieval.evidence.items import EvidenceItem

Form = Literal["triples", "paths"]

_INSTRUCTION = (
    "Based on the {kind} retrieved from a knowledge graph, please answer the question. "
    'Please return formatted answers as a list, each prefixed with "ans:".'
)
SYSTEM_PROMPT_TRIPLES = _INSTRUCTION.format(kind="triples")
"""Verbatim from the paper (Figure 7)."""
SYSTEM_PROMPT_PATHS = _INSTRUCTION.format(kind="paths")
"""The paper's instruction with "triples" replaced by "paths"."""

EXAMPLE_QUESTION = "What year did the team with mascot named Lou Seal win the World Series?"

EXAMPLE_TRIPLES: tuple[str, ...] = (
    "(Lou Seal,sports.mascot.team,San Francisco Giants)",
    "(San Francisco Giants,sports.sports.team.championships,2012 World Series)",
    "(San Francisco Giants,sports.sports.championship.event.champion,2014 World Series)",
    "(San Francisco Giants,time.participant.event,2014 Major League Baseball season)",
    "(San Francisco Giants,time.participant.event,2010 World Series)",
    "(San Francisco Giants,time.participant.event,2010 Major League Baseball season)",
    "(San Francisco Giants,sports.sports.team.championships,2014 World Series)",
    "(San Francisco Giants,sports.sports.team.team.mascot,Crazy Crab)",
    "(San Francisco Giants,sports.sports.team.championships,2010 World Series)",
    "(San Francisco Giants,sports.professional.sports.team.owner.s,Bill Neukom)",
    "(San Francisco Giants,time.participant.event,2012 World Series)",
    "(San Francisco Giants,sports.sports.team.location.teams,San Francisco Giants)",
    "(San Francisco Giants,sports.sports.team.arena.stadium,AT&T Park)",
    "(AT&T Park,location.location.events,2012 World Series)",
    "(m.011zsc4,organization.leadership.organization,San Francisco Giants)",
    "(San Francisco Giants,sports.sports.team.previously_known_as,New York Giants)",
    "(AT&T Park,location.location.events,2010 World Series)",
    "(Crazy Crab,sports.mascot.team,San Francisco Giants)",
    "(New York Giants,baseball.baseball.team.league,National League)",
    "(San Francisco Giants,sports.sports.team.colors,Black)",
    "(San Francisco Giants,sports.sports.team.previously_known_as,New York Gothsams)",
    "(m.0k079qm,base.schemastaging.team_training_ground.relationship.team,San Francisco Giants)",
    "(m.0k079ry,base.schemastaging.team_training_ground.relationship.team,San Francisco Giants)",
    "(2010 World Series,time.event.locations,AT&T Park)",
    "(San Francisco Giants,time.participant.event,2012 Major League Baseball season)",
    "(San Francisco Giants,baseball.baseball.team.league,National League)",
    "(m.0crt80,sports.sports.league.participation.league,National League West)",
    "(San Francisco Giants,sports.sports.team.location,San Francisco)",
    "(San Francisco Giants,sports.sports.team.sport,Baseball)",
    "(m.05n6dtn,baseball.baseball.team.stats.team,San Francisco Giants)",
)
"""The paper's example triples, in the paper's order (it is not sorted by score)."""

_GIANTS = "Lou Seal -> sports.mascot.team -> San Francisco Giants"
EXAMPLE_PATHS: tuple[str, ...] = (
    f"{_GIANTS} -> sports.sports.team.colors -> Black",
    f"{_GIANTS} -> sports.sports.team.sport -> Baseball",
    f"{_GIANTS} -> sports.sports.team.location -> San Francisco",
    f"{_GIANTS} -> sports.professional.sports.team.owner.s -> Bill Neukom",
    f"{_GIANTS} -> sports.sports.team.team.mascot -> Crazy Crab",
    f"{_GIANTS} -> sports.sports.team.previously_known_as -> New York Giants",
    f"{_GIANTS} -> baseball.baseball.team.league -> National League",
    f"{_GIANTS} -> sports.sports.team.arena.stadium -> AT&T Park"
    " -> location.location.events -> 2010 World Series",
    f"{_GIANTS} -> time.participant.event -> 2010 Major League Baseball season",
    f"{_GIANTS} -> time.participant.event -> 2012 World Series",
    f"{_GIANTS} -> sports.sports.team.championships -> 2012 World Series",
    f"{_GIANTS} -> sports.sports.team.championships -> 2014 World Series",
    f"{_GIANTS} -> sports.sports.team.championships -> 2010 World Series",
)
"""Our paths rewrite of the example: the same facts as chains from the topic entity, best last."""

_EXAMPLE_STEPS = (
    "To find the year the team with mascot named Lou Seal won the World Series, we need to find the team "
    "with mascot named Lou Seal and then find the year they won the World Series.",
    "From the {kind}, we can see that Lou Seal is the mascot of the San Francisco Giants.",
    "Now, we need to find the year the San Francisco Giants won the World Series.",
    "From the {kind}, we can see that San Francisco Giants won the 2010 World Series and 2012 World Series "
    "and 2014 World Series.",
    "So, the team with mascot named Lou Seal (San Francisco Giants) won the World Series in 2010, 2012, "
    "and 2014.",
    "Therefore, the formatted answers are:",
)
_EXAMPLE_ANSWERS = (
    "ans: 2014 (2014 World Series)\nans: 2012 (2012 World Series)\nans: 2010 (2010 World Series)"
)
EXAMPLE_REPLY_TRIPLES = "\n\n".join(_EXAMPLE_STEPS).format(kind="triplets") + "\n\n" + _EXAMPLE_ANSWERS
"""The paper's example answer (paragraphs as in Figure 7; the ``ans:`` lines one per line, as in Figure 2)."""
EXAMPLE_REPLY_PATHS = "\n\n".join(_EXAMPLE_STEPS).format(kind="paths") + "\n\n" + _EXAMPLE_ANSWERS

_DOUBLE_CHECK = (
    "Please double-check your answer against the {kind} above. Return the final answers as a list, "
    'one per line, each prefixed with "ans:". If the {kind} do not contain the answer, reply '
    '"ans: not available".'
)
_HEADER: dict[Form, str] = {"triples": "Triplets:", "paths": "Paths:"}
_KIND: dict[Form, str] = {"triples": "triplets", "paths": "paths"}


def double_check_message(form: Form) -> Message:
    """The follow-up user turn sent once when a reply has no ``ans:`` line.

    The paper gives no wording for it; this one restates the format and names the abstention
    reply, which is what a model that rambled without answering usually lacks.
    """
    return {"role": "user", "content": _DOUBLE_CHECK.format(kind=_KIND[form])}


def user_message(question: str, lines: Sequence[str], *, form: Form) -> Message:
    """``Triplets:``/``Paths:`` then the evidence lines then ``Question:``, as the paper lays it out."""
    evidence = "".join(f"\n{line}" for line in lines)
    return {"role": "user", "content": f"{_HEADER[form]}{evidence}\n\nQuestion:\n{question.strip()}"}


def base_messages(form: Form) -> list[Message]:
    """System instruction plus the one-shot Lou Seal exchange, in the requested form."""
    if form == "triples":
        system, lines, reply = SYSTEM_PROMPT_TRIPLES, EXAMPLE_TRIPLES, EXAMPLE_REPLY_TRIPLES
    else:
        system, lines, reply = SYSTEM_PROMPT_PATHS, EXAMPLE_PATHS, EXAMPLE_REPLY_PATHS
    return [
        {"role": "system", "content": system},
        user_message(EXAMPLE_QUESTION, lines, form=form),
        {"role": "assistant", "content": reply},
    ]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt that fits its budget.

    Attributes:
        messages: the chat messages, system first, the question's user turn last.
        form: ``"triples"`` or ``"paths"``.
        items_used: the evidence lines that made it in, in prompt order (the strongest suffix).
        items_dropped: how many of the weakest lines were left out to fit.
        prompt_tokens: the tokens ``messages`` take, by the counter the prompt was built with.
    """

    messages: tuple[Message, ...]
    form: Form
    items_used: tuple[EvidenceItem, ...]
    items_dropped: int
    prompt_tokens: int

    def message_list(self) -> list[Message]:
        """Fresh copies of the messages, safe to hand to a client that may mutate them."""
        return [dict(m) for m in self.messages]


def build_prompt(
    question: str,
    items: Sequence[EvidenceItem],
    *,
    form: Form,
    count_tokens: Callable[[list[Message]], int],
    context_tokens: int,
    max_new_tokens: int,
) -> Prompt:
    """Assemble the prompt with as many evidence lines as fit, dropping the weakest first.

    The budget for the prompt is ``context_tokens - max_new_tokens``, so the reply always has room.
    The kept lines are a suffix of ``items`` (they arrive weakest first); the largest suffix that
    fits is found by binary search, so ``count_tokens`` runs O(log n) times and the recorded
    ``prompt_tokens`` is exactly what the counter said for the final messages.

    Args:
        question: the question as the user asked it.
        items: evidence lines in prompt order, weakest first, best last.
        form: ``"triples"`` for ``(h,r,t)`` lines, ``"paths"`` for ``e1 -> r1 -> e2`` lines.
        count_tokens: tokens a message list takes (the client's ``count_tokens``).
        context_tokens: the model's context window in tokens.
        max_new_tokens: tokens reserved for the reply.

    Returns:
        The fitted :class:`Prompt`.

    Raises:
        ReaderError: not even the instruction, the example and the question fit the budget.
    """
    budget = context_tokens - max_new_tokens
    head = base_messages(form)
    texts = [item.text for item in items]

    def messages_for(kept: int) -> list[Message]:
        return [*head, user_message(question, texts[len(texts) - kept :], form=form)]

    def tokens_for(kept: int) -> int:
        return count_tokens(messages_for(kept))

    kept, tokens = len(texts), tokens_for(len(texts))
    if tokens > budget:
        lo, lo_tokens = 0, tokens_for(0)
        if lo_tokens > budget:
            raise ReaderError(
                f"the reader prompt without evidence takes {lo_tokens} tokens but only {budget} are left "
                f"(context {context_tokens} - reply {max_new_tokens}) for question {question[:80]!r}",
                hint="raise reader.context_tokens (if the model allows) or lower reader.max_new_tokens",
            )
        hi = len(texts)  # invariant: lo fits, hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            mid_tokens = tokens_for(mid)
            if mid_tokens <= budget:
                lo, lo_tokens = mid, mid_tokens
            else:
                hi = mid
        kept, tokens = lo, lo_tokens
    return Prompt(
        messages=tuple(messages_for(kept)),
        form=form,
        items_used=tuple(items[len(items) - kept :]),
        items_dropped=len(items) - kept,
        prompt_tokens=tokens,
    )


def evidence_budget(
    question: str,
    *,
    form: Form,
    count_tokens: Callable[[list[Message]], int],
    context_tokens: int,
    max_new_tokens: int,
    tokens: int | None = None,
) -> TokenBudget:
    """The tokens this question's evidence lines may take, and a counter for one line.

    Args:
        tokens: the budget; ``None`` means what :func:`build_prompt` would leave for evidence:
            ``context_tokens - max_new_tokens`` less the prompt without evidence.
        count_tokens, context_tokens, max_new_tokens: as for :func:`build_prompt`.

    A line's cost is what it adds to the question's user turn (its newline included), so the
    lines of a selection add up to about what they take in the prompt; :func:`build_prompt` still
    fits the exact count.
    """
    bare_turn = user_message(question, [], form=form)
    bare = count_tokens([bare_turn])

    def count(line: str) -> int:
        return count_tokens([user_message(question, [line], form=form)]) - bare

    if tokens is None:
        tokens = context_tokens - max_new_tokens - count_tokens([*base_messages(form), bare_turn])
    return TokenBudget(max(tokens, 0), count)
