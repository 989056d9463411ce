"""Triple scorer: factorised == concat, shared no-text vector, checkpoints."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from subgraphs import D, random_batch

from kgqa.errors import CheckpointError, ConfigError
from kgqa.reasoning.extractive import EntityReader, ReaderConfig
from kgqa.retrieval.models.scorer import ScorerConfig, TripleScorer


def make_scorer(seed: int = 0, **kw: int) -> TripleScorer:
    torch.manual_seed(seed)
    return TripleScorer(ScorerConfig(emb_dim=D, hidden=16, **kw)).eval()


@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_triple_scorer_factorised_forward_equals_concat(seed: int, layers: int, device: torch.device) -> None:
    model = make_scorer(seed, layers=layers).to(device)
    batch = random_batch(seed).to(device)
    out = model(batch)
    assert out.shape == (batch.num_triples,)
    assert out.device.type == device.type
    torch.testing.assert_close(out, model.forward_concat(batch), atol=1e-5, rtol=1e-5)


def test_triple_scorer_handles_batch_without_triples(device: torch.device) -> None:
    model = make_scorer().to(device)
    batch = random_batch(0, e=0).to(device)
    assert model(batch).shape == (0,)
    assert model.forward_concat(batch).shape == (0,)


def test_triple_scorer_ignores_embedding_rows_of_entities_without_text() -> None:
    model = make_scorer()
    batch = random_batch(1)
    emb = batch.entity_emb.clone()
    emb[~batch.has_text] = torch.randn(int((~batch.has_text).sum()), D) * 100
    changed = dataclasses.replace(batch, entity_emb=emb)
    torch.testing.assert_close(model(changed), model(batch))
    torch.testing.assert_close(model.forward_concat(changed), model.forward_concat(batch))


def test_triple_scorer_propagates_gradient_to_no_text_vector() -> None:
    model = make_scorer().train()
    model(random_batch(2)).sum().backward()
    assert model.no_text.grad is not None
    assert model.no_text.grad.abs().sum() > 0


def test_triple_scorer_checkpoint_round_trip_preserves_outputs(tmp_path: Path) -> None:
    model = make_scorer(layers=3)
    path = tmp_path / "scorer.pt"
    torch.save(model.checkpoint(embedder_model_id="fake-hash-16", extra={"epoch": 7}), path)
    loaded = TripleScorer.from_checkpoint(path, embedder_model_id="fake-hash-16")
    assert loaded.config == model.config
    assert not loaded.training
    batch = random_batch(3)
    torch.testing.assert_close(loaded(batch), model(batch))
    raw = torch.load(path, weights_only=True)
    assert raw["kind"] == "triple_scorer" and raw["format_version"] == 1 and raw["epoch"] == 7
    assert raw["config"] == {"emb_dim": D, "dde_dim": 10, "hidden": 16, "layers": 3, "dropout": 0.0}
    torch.testing.assert_close(TripleScorer.from_checkpoint(raw)(batch), model(batch))


def test_triple_scorer_from_checkpoint_raises_when_file_missing(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist") as info:
        TripleScorer.from_checkpoint(tmp_path / "nope.pt")
    assert info.value.hint


def test_triple_scorer_from_checkpoint_raises_when_file_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "bad.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="bad.pt is truncated, corrupt"):
        TripleScorer.from_checkpoint(path)


def test_triple_scorer_from_checkpoint_raises_when_kind_differs() -> None:
    ckpt = EntityReader(ReaderConfig(emb_dim=D, hidden=16)).checkpoint(embedder_model_id="m")
    with pytest.raises(CheckpointError, match="entity_reader") as info:
        TripleScorer.from_checkpoint(ckpt)
    assert info.value.hint


def test_triple_scorer_from_checkpoint_raises_when_format_version_differs() -> None:
    ckpt = {**make_scorer().checkpoint(embedder_model_id="m"), "format_version": 2}
    with pytest.raises(CheckpointError, match="format_version"):
        TripleScorer.from_checkpoint(ckpt)


def test_triple_scorer_from_checkpoint_raises_when_shapes_mismatch() -> None:
    ckpt = make_scorer().checkpoint(embedder_model_id="m")
    ckpt["config"] = {**ckpt["config"], "hidden": 32}
    with pytest.raises(CheckpointError, match="does not fit"):
        TripleScorer.from_checkpoint(ckpt)


def test_triple_scorer_from_checkpoint_raises_when_config_invalid() -> None:
    ckpt = make_scorer().checkpoint(embedder_model_id="m")
    ckpt["config"] = {**ckpt["config"], "width": 3}
    with pytest.raises(CheckpointError, match="width"):
        TripleScorer.from_checkpoint(ckpt)


def test_triple_scorer_from_checkpoint_raises_when_embedder_differs() -> None:
    ckpt = make_scorer().checkpoint(embedder_model_id="gte-large-en-v1.5")
    with pytest.raises(CheckpointError, match="gte-large-en-v1.5"):
        TripleScorer.from_checkpoint(ckpt, embedder_model_id="all-MiniLM-L6-v2")


def test_triple_scorer_checkpoint_rejects_reserved_extra_keys() -> None:
    with pytest.raises(ValueError, match="reserved"):
        make_scorer().checkpoint(embedder_model_id="m", extra={"kind": "x"})


def test_scorer_config_round_trips_and_rejects_bad_values() -> None:
    cfg = ScorerConfig(emb_dim=4, layers=1, dropout=0.1)
    assert ScorerConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="layers"):
        ScorerConfig(emb_dim=4, layers=0)
    with pytest.raises(ConfigError, match="dropout"):
        ReaderConfig(emb_dim=4, dropout=1.0)
    with pytest.raises(ConfigError):
        ReaderConfig.from_dict({"hidden": 3})


def test_scorer_batch_rejects_mismatched_shapes() -> None:
    batch = random_batch(0)
    with pytest.raises(ValueError, match="has_text"):
        dataclasses.replace(batch, has_text=batch.has_text[:3])
