"""The LLM reader: SubgraphRAG prompt in, ``ans:`` answers out, through any :class:`LLMClient`.

Decoding is deterministic by default (``reader.temperature`` 0 and the fixed ``reader.seed``), so
a rerun of an evaluation asks the same thing and, on backends that honour it, gets the same reply.

When the first reply has no ``ans:`` line the reader sends exactly one follow-up, the
"double-check" turn of :func:`kgqa.reasoning.prompts.double_check_message`, with the first reply
kept in the conversation. If the second reply has no ``ans:`` line either, the reading is
*abstain-like*: no answers, ``abstained=True`` and ``format_error=True``. We chose that over
raising because one unruly reply should not stop a batch evaluation, and scoring it as "no
answer" is what it is; the flag keeps it apart from a deliberate ``ans: not available`` in logs
and metrics. Every raw reply is kept for the prediction log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgqa.config import ReaderSettings
from kgqa.reasoning.parse import parse_answers
from kgqa.reasoning.prompts import Form, Prompt, build_prompt, double_check_message, evidence_budget
from kgqa.reasoning.readers.protocol import LLMClient, Message

if TYPE_CHECKING:
    from kgqa.retrieval.evidence.items import EvidenceItem
    from kgqa.types import TokenBudget


@dataclass(frozen=True, slots=True)
class LLMReading:
    """What the LLM reader made of one question.

    Attributes:
        answers: distinct answers in the order the model gave them; empty when abstained.
        abstained: the model said ``ans: not available`` (or a variant), or never wrote ``ans:``.
        format_error: no reply had an ``ans:`` line, even after the double-check retry.
        retried: the double-check follow-up was sent.
        raw_replies: every reply text, first to last (one, or two when retried).
        prompt_tokens: prompt tokens over all calls, as the backend counted them.
        completion_tokens: generated tokens over all calls.
        items_used: the evidence lines in the final prompt, in prompt order (the strongest suffix).
        items_dropped: how many of the weakest lines did not fit the context budget.
        model_id: the backend's model name.
    """

    answers: tuple[str, ...]
    abstained: bool
    format_error: bool
    retried: bool
    raw_replies: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    items_used: tuple[EvidenceItem, ...]
    items_dropped: int
    model_id: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for the prediction log (evidence lines by text)."""
        return {
            "answers": list(self.answers),
            "abstained": self.abstained,
            "format_error": self.format_error,
            "retried": self.retried,
            "raw_replies": list(self.raw_replies),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "items_used": [item.text for item in self.items_used],
            "items_dropped": self.items_dropped,
            "model_id": self.model_id,
        }


class LLMReader:
    """Answers a question from evidence lines with an LLM, the SubgraphRAG way."""

    def __init__(self, client: LLMClient, settings: ReaderSettings) -> None:
        """Bind a backend and the ``reader`` settings.

        The prompt budget is the smaller of ``settings.context_tokens`` and the client's own
        window; ``settings.max_new_tokens`` of it is kept for the reply.
        """
        self.client = client
        self.settings = settings
        self.context_tokens = min(settings.context_tokens, client.context_tokens)

    def _prompt(
        self, question: str, items: Sequence[EvidenceItem], form: Form, tail: list[Message]
    ) -> Prompt:
        def count(messages: list[Message]) -> int:
            return self.client.count_tokens([*messages, *tail])

        return build_prompt(
            question,
            items,
            form=form,
            count_tokens=count,
            context_tokens=self.context_tokens,
            max_new_tokens=self.settings.max_new_tokens,
        )

    def evidence_budget(self, question: str, *, form: Form, tokens: int | None = None) -> TokenBudget:
        """The evidence token budget of ``question``'s prompt, counted by this reader's client
        (:func:`kgqa.reasoning.prompts.evidence_budget`; ``tokens`` ``None``: what the context leaves)."""
        return evidence_budget(
            question,
            form=form,
            count_tokens=self.client.count_tokens,
            context_tokens=self.context_tokens,
            max_new_tokens=self.settings.max_new_tokens,
            tokens=tokens,
        )

    def read(self, question: str, items: Sequence[EvidenceItem], *, form: Form = "triples") -> LLMReading:
        """Ask the model, parse its ``ans:`` lines, and double-check once if there are none.

        Args:
            question: the question text.
            items: evidence lines in prompt order, weakest first, best last.
            form: ``"triples"`` for triple lines, ``"paths"`` for ReG chains or PathRAG paths.

        Returns:
            The :class:`LLMReading`.

        Raises:
            LLMUnavailableError: the backend kept failing after its retries.
            ReaderError: the prompt cannot fit, or the backend rejected the request.
        """
        settings = self.settings
        prompt = self._prompt(question, items, form, [])
        messages = prompt.message_list()
        first = self.client.complete(
            messages, temperature=settings.temperature, max_tokens=settings.max_new_tokens, seed=settings.seed
        )
        replies, completions = [first.text], [first]
        parsed = parse_answers(first.text)
        if not parsed.has_answer_line:
            tail = [{"role": "assistant", "content": first.text}, double_check_message(form)]
            # refit with the first reply and the follow-up counted: may drop more weak lines
            prompt = self._prompt(question, items, form, tail)
            second = self.client.complete(
                [*prompt.message_list(), *tail],
                temperature=settings.temperature,
                max_tokens=settings.max_new_tokens,
                seed=settings.seed,
            )
            replies.append(second.text)
            completions.append(second)
            parsed = parse_answers(second.text)
        return LLMReading(
            answers=parsed.answers,
            abstained=parsed.abstained or not parsed.has_answer_line,
            format_error=not parsed.has_answer_line,
            retried=len(replies) > 1,
            raw_replies=tuple(replies),
            prompt_tokens=sum(c.prompt_tokens for c in completions),
            completion_tokens=sum(c.completion_tokens for c in completions),
            items_used=prompt.items_used,
            items_dropped=prompt.items_dropped,
            model_id=self.client.model_id,
        )
