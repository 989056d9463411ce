"""In-process vLLM, for batch evaluation on a GPU machine without running a separate server.

vLLM is an optional extra (``pip install "kgqa[vllm]"``) and is imported only when this client is
built, so nothing else in kgqa needs it. Chat models are driven through ``LLM.chat`` with the
model's own chat template, and token counts come from the engine's outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgqa.errors import BackendNotInstalledError
from kgqa.reasoning.readers.protocol import Completion, Message


class VLLMClient:
    """:class:`~kgqa.reasoning.readers.protocol.LLMClient` over an in-process ``vllm.LLM``."""

    def __init__(
        self,
        model: str,
        *,
        context_tokens: int = 8192,
        seed: int = 0,
        gpu_memory_utilization: float = 0.9,
    ) -> None:
        """Start the engine (loads weights onto the GPU; slow, do it once per process).

        Args:
            model: a local model folder or a name vLLM can resolve.
            context_tokens: ``max_model_len`` for the engine.
            seed: the engine's seed (decoding is greedy at temperature 0 anyway).
            gpu_memory_utilization: share of GPU memory vLLM may claim.

        Raises:
            BackendNotInstalledError: vllm is not installed (the hint names the extra).
        """
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise BackendNotInstalledError(
                "reader.backend = 'vllm' needs vLLM, which is not installed; install the kgqa[vllm] extra",
                hint='pip install "kgqa[vllm]"  (or use reader.backend = "openai" against a vLLM server)',
            ) from exc
        self._sampling_params = SamplingParams
        self._llm: Any = LLM(
            model=model,
            max_model_len=context_tokens,
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
        )
        self._tokenizer: Any = self._llm.get_tokenizer()
        self.model_id = model
        self.context_tokens = context_tokens

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Exact prompt tokens, through the model's chat template."""
        ids = self._tokenizer.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True)
        return len(ids)

    def complete(
        self, messages: Sequence[Message], *, temperature: float, max_tokens: int, seed: int | None
    ) -> Completion:
        """One chat completion through the engine."""
        params = self._sampling_params(temperature=temperature, max_tokens=max_tokens, seed=seed)
        (result,) = self._llm.chat([list(messages)], params, use_tqdm=False)
        output = result.outputs[0]
        return Completion(output.text, len(result.prompt_token_ids), len(output.token_ids))
