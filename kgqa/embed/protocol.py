"""The embedder seam: batch text in, L2-normalised float32 rows out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from torch import Tensor


@runtime_checkable
class Embedder(Protocol):
    """Encodes texts into one vector space; the store records ``model_id`` and ``dimension``.

    Attributes:
        model_id: stable model name, compared with the one recorded in the store.
        dimension: vector size d.
    """

    model_id: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> Tensor:
        """Embed a batch.

        Returns:
            FloatTensor [n, d] on the CPU, float32, each row L2-normalised (cosine = dot product).
        """
        ...
