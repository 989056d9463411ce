"""Sentence embedders: the ``Embedder`` protocol, the factory that builds the configured one, and
the words its model knows."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgqa.config import EmbedderSettings
    from kgqa.embed.protocol import Embedder


def make_embedder(settings: EmbedderSettings) -> Embedder:
    """Build the embedder named by ``settings.model`` (imports torch/transformers lazily)."""
    from kgqa.embed.transformer import TransformerEmbedder

    return TransformerEmbedder.from_settings(settings)


def known_words(embedder: Embedder) -> frozenset[str]:
    """The whole words of ``embedder``'s vocabulary (:meth:`TransformerEmbedder.words`); none for
    an embedder without a tokenizer (a test's hashed embedder)."""
    from kgqa.embed.transformer import TransformerEmbedder

    return embedder.words() if isinstance(embedder, TransformerEmbedder) else frozenset()
