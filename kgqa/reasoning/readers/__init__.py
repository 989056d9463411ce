"""LLM backends behind one small protocol, chosen by ``reader.backend`` and imported lazily.

Importing this package loads neither ``openai``, ``transformers`` nor ``vllm``; only the backend
that :func:`make_llm_client` picks is imported, so the CLI stays fast and optional extras stay
optional.
"""

from __future__ import annotations

from pathlib import Path

from kgqa.config import ReaderSettings
from kgqa.errors import ConfigError
from kgqa.reasoning.readers.protocol import Completion, LLMClient, Message

__all__ = ["Completion", "LLMClient", "Message", "make_llm_client"]


def make_llm_client(settings: ReaderSettings, *, cache_dir: Path | None = None) -> LLMClient:
    """The backend ``settings.backend`` names, configured from ``settings``.

    Args:
        settings: the ``reader`` section.
        cache_dir: where the ``transformers`` backend keeps the assembled and converted bundled
            model (default ``~/.cache/kgqa``); preparing it is a one-time, explicit step here.

    Raises:
        ConfigError: a required setting is missing (``reader.model`` for openai/vllm).
        BackendNotInstalledError: the backend's extra is not installed.
    """
    backend = settings.backend
    if backend == "openai":
        from kgqa.reasoning.readers.openai_client import OpenAIClient

        if not settings.model:
            raise ConfigError(
                "reader.backend = 'openai' needs reader.model, the served model name",
                hint="set KGQA_READER__MODEL (GET <base_url>/models lists what the server serves)",
            )
        return OpenAIClient(
            settings.model,
            base_url=settings.base_url,
            api_key=settings.api_key.get_secret_value() if settings.api_key else None,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            context_tokens=settings.context_tokens,
            backoff_s=settings.retry_backoff_s,
        )
    if backend == "transformers":
        from kgqa.device import resolve_device
        from kgqa.reasoning.readers.transformers_client import (
            BUNDLED_MODEL,
            TransformersClient,
            prepare_bundled_model,
        )

        device = resolve_device(settings.device)
        model = settings.model or BUNDLED_MODEL
        if model == BUNDLED_MODEL:
            return TransformersClient(
                prepare_bundled_model(cache_dir),
                device=device,
                context_tokens=settings.context_tokens,
                model_id=BUNDLED_MODEL,
            )
        path = Path(model)
        if path.suffix == ".gguf":
            return TransformersClient(
                path.parent, gguf_file=path.name, device=device, context_tokens=settings.context_tokens
            )
        return TransformersClient(path, device=device, context_tokens=settings.context_tokens)
    if backend == "vllm":
        from kgqa.reasoning.readers.vllm_client import VLLMClient

        if not settings.model:
            raise ConfigError(
                "reader.backend = 'vllm' needs reader.model, a local model folder or hub name",
                hint="set KGQA_READER__MODEL",
            )
        return VLLMClient(settings.model, context_tokens=settings.context_tokens, seed=settings.seed)
    raise ConfigError(
        f"unknown reader.backend {backend!r}", hint="use one of: openai, transformers, vllm"
    )  # pragma: no cover - the settings model rejects it first
