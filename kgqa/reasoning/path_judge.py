"""ReG's LLM-guided candidate refinement: an LLM keeps the candidate reasoning chains that answer
the question logically, not just the ones that happen to reach an answer.

Following ReG (Appendix F, Fig. 6): each candidate is shown as a directional chain of entities
and relations from the topic to an answer (``Jaws -[directed_by]-> Steven Spielberg``, ``<-[r]-``
where the walk crosses a triple from tail to head), numbered; an in-context demonstration with an
explanation shows the task; the reply explains, then names the chosen chains on a final
``ans: 1, 3`` line, the answer marker of the project's reader prompt, so backends that prime the
reply with ``ans:`` (the in-process transformers one) answer in the same form, without the
explanation. Parsing reads the last ``ans:`` (or ``Selected:``) line only; ``ans: none`` keeps
nothing, and a reply without the line, or naming no valid number, is a format failure that keeps
nothing too (the question then trains on what the caller falls back to).

Every judgement goes through a :class:`~kgqa.reasoning.judgement_cache.JudgementCache`, so a
re-run asks nothing twice and a killed run resumes; up to ``reader.concurrency`` requests are in
flight. Retries are the backend's (tenacity in the OpenAI client); when it gives up, the run
stops with :class:`~kgqa.errors.LLMUnavailableError` after the judgements already made are cached.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass

from kgqa.config import ReaderSettings
from kgqa.reasoning.judgement_cache import JudgementCache, judgement_key
from kgqa.reasoning.readers.protocol import LLMClient, Message

SYSTEM = (
    "You are a knowledge-graph reasoning expert. Given a question and candidate reasoning paths "
    "found in a knowledge graph, each leading from the question's topic entity to an entity that "
    "answers it, select the paths whose relations logically answer the question. A path that "
    "reaches an answer through relations the question does not ask about is a coincidence: do not "
    "select it."
)

DEMONSTRATION_QUESTION = "who directed the movies written by Nora Ephron"
DEMONSTRATION_PATHS = (
    "Nora Ephron <-[written_by]- Sleepless in Seattle -[directed_by]-> Nora Ephron",
    "Nora Ephron <-[written_by]- You've Got Mail -[starred_actors]-> Meg Ryan",
    "Nora Ephron <-[written_by]- When Harry Met Sally -[directed_by]-> Rob Reiner",
    "Nora Ephron <-[written_by]- Julie & Julia -[release_year]-> 2009",
)
DEMONSTRATION_REPLY = (
    "Explanation: the question asks for the directors of the movies Nora Ephron wrote, so a path "
    "must go from her to a movie through written_by and then to a person through directed_by. "
    "Paths 1 and 3 do; path 2 reaches an actor and path 4 a year, which the question does not "
    "ask about.\nans: 1, 3"
)

_SELECTED = re.compile(
    r"(?<![A-Za-z0-9_])(?:ans|selected(?:\s+paths?)?)\W{0,3}\s*[:：]\s*(.*)$", re.IGNORECASE | re.MULTILINE
)
_NUMBER = re.compile(r"\d+")
_NONE = re.compile(r"^\W*(none|nothing|no paths?)\b", re.IGNORECASE)


def format_chain(entities: Sequence[str], relations: Sequence[str], backward: Sequence[bool]) -> str:
    """One candidate as a directional chain: ``A -[r]-> B`` forward, ``A <-[r]- B`` backward."""
    parts = [entities[0]]
    for relation, back, entity in zip(relations, backward, entities[1:], strict=True):
        parts.append(f"<-[{relation}]-" if back else f"-[{relation}]->")
        parts.append(entity)
    return " ".join(parts)


def _user_message(question: str, chains: Sequence[str]) -> str:
    listed = "\n".join(f"{i}. {chain}" for i, chain in enumerate(chains, start=1))
    return (
        f"Question: {question}\nCandidate paths:\n{listed}\n\n"
        "Explain briefly which paths answer the question, then end with one line "
        "'ans: <numbers separated by commas>' (or 'ans: none')."
    )


def judge_messages(question: str, chains: Sequence[str]) -> list[Message]:
    """The chat messages of one judgement: instructions, the demonstration, the question."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _user_message(DEMONSTRATION_QUESTION, DEMONSTRATION_PATHS)},
        {"role": "assistant", "content": DEMONSTRATION_REPLY},
        {"role": "user", "content": _user_message(question, chains)},
    ]


def parse_selection(reply: str, num_chains: int) -> tuple[int, ...] | None:
    """0-based indices of the chains the last ``ans:`` (or ``Selected:``) line names, in order,
    each once.

    Returns ``()`` for ``ans: none`` and ``None`` for a format failure (no such line, or no
    number in range on it).
    """
    lines = _SELECTED.findall(reply)
    if not lines:
        return None
    last = lines[-1].strip()
    if _NONE.match(last):
        return ()
    chosen = [int(n) - 1 for n in _NUMBER.findall(last)]
    kept = tuple(dict.fromkeys(i for i in chosen if 0 <= i < num_chains))
    return kept or None


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the judge made of one question: the chains it kept (``None`` on a format failure),
    its raw reply, and whether the reply came from the cache."""

    selected: tuple[int, ...] | None
    reply: str
    cached: bool


class PathJudge:
    """Judges questions' candidate chains with an LLM, every reply cached on disk."""

    def __init__(self, client: LLMClient, settings: ReaderSettings, cache: JudgementCache) -> None:
        self.client, self.settings, self.cache = client, settings, cache

    def _key(self, messages: Sequence[Message]) -> str:
        s = self.settings
        return judgement_key(self.client.model_id, messages, s.temperature, s.max_new_tokens, s.seed)

    def _ask(self, messages: list[Message], key: str) -> str:
        s = self.settings
        reply = self.client.complete(
            messages, temperature=s.temperature, max_tokens=s.max_new_tokens, seed=s.seed
        ).text
        self.cache.put(key, reply)
        return reply

    def judge_all(
        self,
        items: Sequence[tuple[str, Sequence[str]]],
        *,
        on_progress: Callable[[int], None] | None = None,
    ) -> list[Judgement]:
        """One :class:`Judgement` per ``(question, chains)``, in order.

        Cached replies are used as they are; the others are asked with bounded concurrency, the
        first one alone, so an endpoint that is down is refused after one call's retries instead
        of ``concurrency`` of them.

        Raises:
            LLMUnavailableError: the backend gave up; every judgement finished before is cached.
        """
        messages = [judge_messages(q, chains) for q, chains in items]
        keys = [self._key(m) for m in messages]
        replies: dict[str, str] = {}
        for key in keys:
            if (hit := self.cache.get(key)) is not None:
                replies[key] = hit
        cached = set(replies)
        uses = Counter(keys)  # questions asking the same thing share one judgement
        pending = [k for k in uses if k not in replies]
        message_of = dict(zip(keys, messages, strict=True))
        if on_progress:
            on_progress(len(keys) - sum(uses[k] for k in pending))
        if pending:
            replies[pending[0]] = self._ask(message_of[pending[0]], pending[0])
            if on_progress:
                on_progress(uses[pending[0]])
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            futures = {pool.submit(self._ask, message_of[k], k): k for k in pending[1:]}
            done, not_done = wait(futures, return_when=FIRST_EXCEPTION)
            for future in not_done:
                future.cancel()
            for future in done:
                if future.exception() is None:
                    replies[futures[future]] = future.result()
                    if on_progress:
                        on_progress(uses[futures[future]])
            for future in done:
                if (error := future.exception()) is not None:
                    raise error
        return [
            Judgement(parse_selection(replies[k], len(chains)), replies[k], k in cached)
            for k, (_, chains) in zip(keys, items, strict=True)
        ]
