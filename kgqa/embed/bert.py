"""A BERT encoder for inference in plain torch, read from a model folder without ``transformers``.

Why by hand: for the default model (all-MiniLM-L6-v2), importing ``transformers`` and building
its model took 2.3 s of every command's start-up, against 0.02 s to read the tokenizer and
weights here; and its layer-by-layer forward took 5.3 ms for a question's three views where this
one takes 3.3 ms (one thread; measurements in docs/decisions.md). The savings: one fused
query/key/value product per layer, ``scaled_dot_product_attention``, oneDNN-packed bf16 weights
(:mod:`kgqa.embed.packed_linear`), and a few short texts run as one packed sequence.

It covers what BERT-family sentence encoders use: absolute position embeddings, exact GELU,
post-layer-norm blocks, a WordPiece ``tokenizer.json`` with its [CLS]/[SEP] template. Any folder
outside that (:func:`plain_bert_folder` says which) loads with ``transformers``
(:class:`kgqa.embed.transformer.HFEncoder`). Tests check the token ids and the token states
equal ``transformers``' on the default model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from kgqa.embed.packed_linear import onednn_packs_weights, prepack_linears

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: Most tokens of a batch run packed into one sequence (:meth:`BertEncoder.hidden`): its
#: attention grows with the square of the packed length.
PACK_TOKENS = 128

_WEIGHTS, _TOKENIZER = "model.safetensors", "tokenizer.json"


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def plain_bert_folder(path: str) -> bool:
    """Whether ``path`` is a local BERT folder this module reproduces: ``config.json`` says
    ``bert`` with absolute positions and exact GELU, weights in ``model.safetensors``, a
    ``tokenizer.json`` whose lower-casing agrees with ``tokenizer_config.json`` (``transformers``
    would rebuild the normaliser where they differ)."""
    folder = Path(path)
    if not (folder / _WEIGHTS).is_file() or not (folder / _TOKENIZER).is_file():
        return False
    config = _json(folder / "config.json")
    if (
        config.get("model_type") != "bert"
        or config.get("hidden_act", "gelu") != "gelu"
        or config.get("position_embedding_type", "absolute") != "absolute"
    ):
        return False
    tokenizer_config = _json(folder / "tokenizer_config.json")
    if tokenizer_config.get("tokenizer_class", "BertTokenizer") not in ("BertTokenizer", "BertTokenizerFast"):
        return False
    normalizer = _json(folder / _TOKENIZER).get("normalizer") or {}
    lowercase = normalizer.get("lowercase") if normalizer.get("type") == "BertNormalizer" else None
    return lowercase is not None and lowercase == tokenizer_config.get("do_lower_case", True)


class BertLayer(torch.nn.Module):
    """One post-layer-norm transformer block; query, key and value in one product."""

    def __init__(self, hidden: int, intermediate: int, heads: int, eps: float) -> None:
        super().__init__()
        self.heads, self.eps = heads, eps
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.attention_out = torch.nn.Linear(hidden, hidden)
        self.attention_norm = torch.nn.LayerNorm(hidden, eps=eps)
        self.intermediate = torch.nn.Linear(hidden, intermediate)
        self.output = torch.nn.Linear(intermediate, hidden)
        self.output_norm = torch.nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """``x`` [n, L, d]; ``allowed`` bool, broadcastable to [n, heads, L, L] (True: may attend)."""
        n, length, width = x.shape
        q, k, v = self.qkv(x).view(n, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        attended = attended.transpose(1, 2).reshape(n, length, width)
        x = self.attention_norm(self.attention_out(attended) + x)
        return self.output_norm(self.output(F.gelu(self.intermediate(x))) + x)


class BertEncoder(torch.nn.Module):
    """Tokenizer and encoder of a :func:`plain_bert_folder` (eval mode, no gradients kept).

    ``token_ids`` and ``hidden`` are the two calls :class:`kgqa.embed.transformer.TransformerEmbedder`
    makes of an encoder.
    """

    def __init__(self, config: dict[str, Any], tokenizer: Tokenizer, pad_id: int) -> None:
        super().__init__()
        hidden, eps = int(config["hidden_size"]), float(config.get("layer_norm_eps", 1e-12))
        self.hidden_size = hidden
        self.tokenizer, self.pad_id = tokenizer, pad_id
        self.word = torch.nn.Embedding(int(config["vocab_size"]), hidden)
        self.position = torch.nn.Embedding(int(config["max_position_embeddings"]), hidden)
        self.token_type = torch.nn.Embedding(int(config.get("type_vocab_size", 2)), hidden)
        self.embedding_norm = torch.nn.LayerNorm(hidden, eps=eps)
        self.layers = torch.nn.ModuleList(
            BertLayer(hidden, int(config["intermediate_size"]), int(config["num_attention_heads"]), eps)
            for _ in range(int(config["num_hidden_layers"]))
        )

    @classmethod
    def load(cls, path: str, device: torch.device, *, bf16: bool, max_length: int) -> BertEncoder:
        """The encoder of folder ``path`` on ``device`` (bf16 weights when asked, packed on a CPU
        with oneDNN), its tokenizer truncating at ``max_length`` tokens.

        Raises:
            KeyError: the weights lack a tensor BERT has (the folder is not a plain BERT).
        """
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        folder = Path(path)
        tokenizer = Tokenizer.from_file(str(folder / _TOKENIZER))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_length)
        special = _json(folder / "special_tokens_map.json").get("pad_token", "[PAD]")
        pad_id = tokenizer.token_to_id(special["content"] if isinstance(special, dict) else special)
        encoder = cls(_json(folder / "config.json"), tokenizer, 0 if pad_id is None else pad_id)
        encoder.load_state_dict(_renamed(load_file(str(folder / _WEIGHTS))))
        encoder = encoder.to(device, torch.bfloat16 if bf16 else torch.float32).eval().requires_grad_(False)
        if bf16 and device.type == "cpu" and onednn_packs_weights():
            prepack_linears(encoder)
        return encoder

    def vocabulary(self) -> Iterable[str]:
        return self.tokenizer.get_vocab()

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, [CLS] and [SEP] included, truncated (one batched call)."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]

    def hidden(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Float32 last-layer token states [n, L, d] and mask [n, L] of one batch of token id lists,
        L the longest list (padding after each).

        A few short texts (a question's views: at most :data:`PACK_TOKENS` tokens in all) run as
        one sequence without padding: each text attends only to its own tokens and its positions
        restart at 0, so its states are those of its own forward pass, while the encoder runs
        over the sum of the lengths instead of n times the longest. Larger batches (sorted by
        length by the caller) run padded.
        """
        device = self.word.weight.device
        lengths = torch.tensor([len(row) for row in ids])
        width = int(lengths.max())
        if 1 < len(ids) and int(lengths.sum()) <= PACK_TOKENS:
            segment = torch.repeat_interleave(torch.arange(len(ids)), lengths)
            position = torch.cat([torch.arange(n) for n in lengths.tolist()])
            tokens = torch.tensor([[t for row in ids for t in row]])
            allowed = (segment[:, None] == segment[None, :])[None, None]
            states = self._forward(tokens.to(device), position[None].to(device), allowed.to(device))[0]
            hidden = states.new_zeros(len(ids), width, states.shape[-1])
            hidden[segment, position] = states
        else:
            tokens = torch.tensor([row + [self.pad_id] * (width - len(row)) for row in ids])
            position = torch.arange(width).expand(len(ids), width)
            keys = (torch.arange(width)[None, :] < lengths[:, None])[:, None, None, :]
            hidden = self._forward(tokens.to(device), position.to(device), keys.to(device))
        mask = (torch.arange(width)[None, :] < lengths[:, None]).long().to(device)
        return hidden, mask

    def _forward(self, tokens: torch.Tensor, position: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """Float32 last-layer states [n, L, d] of ``tokens`` [n, L] at ``position`` [n, L]."""
        x = self.word(tokens) + self.position(position) + self.token_type.weight[0]
        x = self.embedding_norm(x)
        for layer in self.layers:
            x = layer(x, allowed)
        return x.float()


def _renamed(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``transformers``' BERT tensor names mapped onto :class:`BertEncoder`'s, query, key and
    value concatenated; the pooler and ``position_ids`` buffer are dropped."""
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
    w = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
    out = {
        "word.weight": w["embeddings.word_embeddings.weight"],
        "position.weight": w["embeddings.position_embeddings.weight"],
        "token_type.weight": w["embeddings.token_type_embeddings.weight"],
        "embedding_norm.weight": w["embeddings.LayerNorm.weight"],
        "embedding_norm.bias": w["embeddings.LayerNorm.bias"],
    }
    layer = 0
    while f"encoder.layer.{layer}.attention.self.query.weight" in w:
        src, dst = f"encoder.layer.{layer}.", f"layers.{layer}."
        for part in ("weight", "bias"):
            out[dst + "qkv." + part] = torch.cat(
                [w[f"{src}attention.self.{name}.{part}"] for name in ("query", "key", "value")]
            )
            out[dst + "attention_out." + part] = w[f"{src}attention.output.dense.{part}"]
            out[dst + "attention_norm." + part] = w[f"{src}attention.output.LayerNorm.{part}"]
            out[dst + "intermediate." + part] = w[f"{src}intermediate.dense.{part}"]
            out[dst + "output." + part] = w[f"{src}output.dense.{part}"]
            out[dst + "output_norm." + part] = w[f"{src}output.LayerNorm.{part}"]
        layer += 1
    return out
