"""The seam between the LLM reader and a language-model backend.

The reader owns the prompt and the parsing; a backend only turns chat messages into text. Keeping
the surface this small means an OpenAI-compatible server, in-process vLLM and in-process
transformers are interchangeable without touching :mod:`kgqa.reasoning.prompts` or
:mod:`kgqa.reasoning.parse`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One reply from a backend.

    Attributes:
        text: the generated text (for priming backends, including the primed prefix).
        prompt_tokens: tokens the backend read, as it counted them (server ``usage`` when given).
        completion_tokens: tokens it generated.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int


@runtime_checkable
class LLMClient(Protocol):
    """A chat-completion backend.

    Attributes:
        model_id: the model name as the backend knows it (logged with every reading).
        context_tokens: the most tokens prompt plus reply may take together.
    """

    model_id: str
    context_tokens: int

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens ``messages`` take as a prompt: exact where the backend has the tokenizer, else an estimate
        that errs high, so a prompt built to this count fits."""
        ...

    def complete(
        self, messages: Sequence[Message], *, temperature: float, max_tokens: int, seed: int | None
    ) -> Completion:
        """Generate one reply of at most ``max_tokens`` tokens.

        Raises:
            LLMUnavailableError: the backend kept failing after its retries.
            ReaderError: the backend rejected the request (bad model name, prompt too long).
        """
        ...
