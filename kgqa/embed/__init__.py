"""Sentence embedders: the ``Embedder`` protocol and the factory that builds the configured one."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgqa.config import EmbedderSettings
    from kgqa.embed.protocol import Embedder


def make_embedder(settings: EmbedderSettings) -> Embedder:
    """Build the embedder named by ``settings.model`` (imports torch/transformers lazily)."""
    from kgqa.embed.transformer import TransformerEmbedder

    return TransformerEmbedder.from_settings(settings)
