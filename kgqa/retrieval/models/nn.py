"""Building blocks shared by kgqa's small models: MLP config and tail, checkpointing, scatter helpers.

Every model (:class:`~kgqa.retrieval.models.scorer.TripleScorer`, the planner, the extractive reader)
saves and loads through one checkpoint scheme (``checkpoint()`` / ``from_checkpoint()``): a plain
dict with ``format_version``, ``kind``, ``config``, ``embedder_model_id``, ``kgqa_version`` and
``state_dict``, loaded with ``weights_only=True``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import kgqa
from kgqa.checkpoint_file import load_checkpoint
from kgqa.errors import CheckpointError, ConfigError

FORMAT_VERSION = 1
_RESERVED_KEYS = frozenset(
    {"format_version", "kind", "config", "embedder_model_id", "kgqa_version", "state_dict"}
)


@dataclass(frozen=True, slots=True)
class MlpConfig:
    """Shape of an MLP model; the triple scorer's, planner's and reader's configs subclass it and
    differ in their defaults and extra fields.

    Attributes:
        emb_dim: d, width of the question/entity/relation text embeddings (1024 for gte-large).
        dde_dim: D, width of one entity's DDE (10 for 2 forward + 2 reverse rounds).
        hidden: width of each hidden layer.
        layers: number of hidden layers (Linear + ReLU), >= 1; a final Linear gives the logit.
        dropout: dropout after each hidden activation, in [0, 1).
    """

    emb_dim: int
    dde_dim: int = 10
    hidden: int = 1024
    layers: int = 1
    dropout: float = 0.0

    def __post_init__(self) -> None:
        """Reject shapes no model can be built with."""
        name = type(self).__name__
        if self.emb_dim <= 0 or self.hidden <= 0 or self.dde_dim < 0:
            raise ConfigError(
                f"{name}: emb_dim and hidden must be positive and dde_dim >= 0, "
                f"got emb_dim={self.emb_dim}, hidden={self.hidden}, dde_dim={self.dde_dim}"
            )
        if self.layers < 1:
            raise ConfigError(f"{name}: layers (hidden layers) must be >= 1, got {self.layers}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"{name}: dropout must be in [0, 1), got {self.dropout}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Inverse of :meth:`to_dict`; raises ``ConfigError`` on unknown, missing or invalid keys."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown keys {unknown}", hint=f"valid keys: {sorted(names)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ConfigError(f"{cls.__name__}: {exc}", hint=f"valid keys: {sorted(names)}") from exc


def mlp_tail(hidden: int, *, layers: int, dropout: float) -> nn.Sequential:
    """Everything after the first Linear: ReLU (+dropout), ``layers - 1`` more hidden layers, logit."""
    mods: list[nn.Module] = []
    for i in range(layers):
        if i > 0:
            mods.append(nn.Linear(hidden, hidden))
        mods.append(nn.ReLU(inplace=True))
        if dropout > 0:
            mods.append(nn.Dropout(dropout))
    mods.append(nn.Linear(hidden, 1))
    return nn.Sequential(*mods)


def scatter_max(src: Tensor, index: Tensor, num_nodes: int) -> Tensor:
    """out[v] = max of src[i] with index[i] == v, 0 where no i maps to v: [N]."""
    return src.new_zeros(num_nodes).scatter_reduce(0, index, src, reduce="amax", include_self=False)


def scatter_mean(src: Tensor, index: Tensor, num_groups: int) -> Tensor:
    """out[g] = mean of src[i] with index[i] == g, 0 for a group with none: [num_groups]."""
    total = src.new_zeros(num_groups).index_add(0, index, src)
    count = src.new_zeros(num_groups).index_add(0, index, torch.ones_like(src))
    return total / count.clamp(min=1)


def question_bce(logits: Tensor, targets: Tensor, question: Tensor, num_questions: int) -> Tensor:
    """BCE-with-logits of each question of a batch, averaged over that question's elements:
    [num_questions].

    ``logits``, ``targets``: [M] elements (triples or entities) of several questions;
    ``question``: LongTensor [M], each element's question. The mean of the result is the loss of
    a step over those questions, each weighted alike whatever its size, as when each question
    was its own step (``BCEWithLogitsLoss()`` per question), without a loop over them.
    """
    elementwise = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    return scatter_mean(elementwise, question, num_questions)


class Checkpointable(nn.Module):
    """Checkpoint save/load shared by the models of kgqa (scorers, planner, reader).

    Subclasses set ``KIND`` (the checkpoint's ``kind``) and ``CONFIG`` (their config dataclass),
    store their config as ``self.config`` and take it as the only constructor argument.
    """

    KIND: ClassVar[str]
    CONFIG: ClassVar[type[Any]]

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.config = config

    def checkpoint(self, *, embedder_model_id: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """A self-describing dict for ``torch.save``; ``from_checkpoint`` rebuilds the model from it.

        Args:
            embedder_model_id: the embedder whose vectors the model was trained on; loading
                with another embedder is meaningless, so the pipeline checks it.
            extra: additional entries (e.g. ``epoch``, ``val_recall``); plain Python/tensor
                values only, so the file loads with ``weights_only=True``.

        Returns:
            ``{"format_version", "kind", "config", "embedder_model_id", "kgqa_version",
            "state_dict", **extra}`` with the state dict on CPU.

        Raises:
            ValueError: if ``extra`` uses a reserved key.
        """
        extra = extra or {}
        clash = sorted(_RESERVED_KEYS & set(extra))
        if clash:
            raise ValueError(f"checkpoint extra keys {clash} are reserved")
        return {
            "format_version": FORMAT_VERSION,
            "kind": self.KIND,
            "config": self.config.to_dict(),
            "embedder_model_id": embedder_model_id,
            "kgqa_version": kgqa.__version__,
            "state_dict": {k: v.detach().cpu() for k, v in self.state_dict().items()},
            **extra,
        }

    @classmethod
    def from_checkpoint(
        cls,
        path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
        *,
        embedder_model_id: str | None = None,
    ) -> Self:
        """Rebuild a model (on CPU, in eval mode) from a file written by ``torch.save(checkpoint())``.

        Args:
            path_or_dict: path to the file, or the already-loaded dict.
            embedder_model_id: when given, the checkpoint must have been trained with this embedder.

        Raises:
            CheckpointError: missing or unreadable file, another ``kind`` or ``format_version``,
                an invalid config, a different embedder, or weights that do not fit the config.
        """
        source = "<dict>"
        if isinstance(path_or_dict, Mapping):
            ckpt: Any = path_or_dict
        else:
            source = str(path_or_dict)
            ckpt = load_checkpoint(Path(path_or_dict))
        if not isinstance(ckpt, Mapping):
            raise CheckpointError(f"checkpoint {source} is a {type(ckpt).__name__}, not a dict")
        if ckpt.get("kind") != cls.KIND:
            raise CheckpointError(
                f"checkpoint {source} holds a {ckpt.get('kind')!r}, expected {cls.KIND!r}",
                hint="point the config at the right checkpoint file",
            )
        if ckpt.get("format_version") != FORMAT_VERSION:
            raise CheckpointError(
                f"checkpoint {source} has format_version {ckpt.get('format_version')!r}, "
                f"this kgqa {kgqa.__version__} reads {FORMAT_VERSION}",
                hint="re-train the model with this kgqa version",
            )
        if embedder_model_id is not None and ckpt.get("embedder_model_id") != embedder_model_id:
            raise CheckpointError(
                f"checkpoint {source} was trained on embedder {ckpt.get('embedder_model_id')!r}, "
                f"but the configured embedder is {embedder_model_id!r}",
                hint="set embedder.model to the checkpoint's embedder or re-train",
            )
        try:
            config = cls.CONFIG.from_dict(ckpt["config"])
            model = cls(config)
            model.load_state_dict(ckpt["state_dict"])
        except (KeyError, TypeError, AttributeError, ConfigError, RuntimeError) as exc:
            raise CheckpointError(
                f"checkpoint {source} does not fit {cls.__name__}: {exc}",
                hint="the file was written by incompatible code; re-train the model",
            ) from exc
        return model.eval()
