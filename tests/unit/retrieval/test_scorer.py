"""Triple scorer and entity reader: factorised == concat, shared no-text vector, checkpoints."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from kgqa.errors import CheckpointError, ConfigError
from kgqa.reasoning.extractive import EntityReader, ReaderConfig, incident_score_features
from kgqa.retrieval.dde import dde
from kgqa.retrieval.scorer import ScorerBatch, ScorerConfig, TripleScorer

D = 8


def random_batch(seed: int, *, n: int = 9, e: int = 25, r: int = 4) -> ScorerBatch:
    """A random question subgraph in which entities 0, 3 and 7 have no text."""
    gen = torch.Generator().manual_seed(seed)
    head = torch.randint(0, n, (e,), generator=gen)
    tail = torch.randint(0, n, (e,), generator=gen)
    has_text = torch.ones(n, dtype=torch.bool)
    has_text[[0, 3, 7]] = False
    return ScorerBatch(
        question=torch.randn(D, generator=gen),
        entity_emb=torch.randn(n, D, generator=gen),
        has_text=has_text,
        relation_emb=torch.randn(r, D, generator=gen),
        head=head,
        rel=torch.randint(0, r, (e,), generator=gen),
        tail=tail,
        dde=dde(torch.stack([head, tail]), torch.tensor([0, 1]), n),
    )


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
    with pytest.raises(CheckpointError, match="not found") as info:
        TripleScorer.from_checkpoint(tmp_path / "nope.pt")
    assert info.value.hint


def test_triple_scorer_from_checkpoint_raises_when_file_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "bad.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot read"):
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


# --------------------------------------------------------------------------- entity reader

# 4 entities; triples 0->1 (0.9), 1->2 (0.2), 2->1 (0.5), 0->0 (0.4, a self-loop); entity 3 isolated.
READER_HEAD = [0, 1, 2, 0]
READER_TAIL = [1, 2, 1, 0]
READER_SCORES = [0.9, 0.2, 0.5, 0.4]
# Columns: max incident, mean incident (self-loop once), max as tail, max as head.
READER_EXPECTED = [
    [0.9, (0.9 + 0.4) / 2, 0.4, 0.9],
    [0.9, (0.9 + 0.2 + 0.5) / 3, 0.9, 0.2],
    [0.5, (0.2 + 0.5) / 2, 0.2, 0.5],
    [0.0, 0.0, 0.0, 0.0],
]


def test_incident_score_features_match_hand_computed_values(device: torch.device) -> None:
    feats = incident_score_features(
        torch.tensor(READER_SCORES, device=device),
        torch.tensor(READER_HEAD, device=device),
        torch.tensor(READER_TAIL, device=device),
        4,
    )
    assert feats.device.type == device.type
    torch.testing.assert_close(feats.cpu(), torch.tensor(READER_EXPECTED))


def test_incident_score_features_are_zero_without_triples() -> None:
    empty = torch.tensor([], dtype=torch.long)
    assert torch.equal(incident_score_features(torch.tensor([]), empty, empty, 3), torch.zeros(3, 4))


def test_entity_reader_scores_every_entity_and_round_trips(tmp_path: Path, device: torch.device) -> None:
    torch.manual_seed(0)
    model = EntityReader(ReaderConfig(emb_dim=D, hidden=16)).eval().to(device)
    batch = random_batch(4).to(device)
    scores = torch.rand(batch.num_triples, device=device)
    topic = torch.tensor([0], device=device)
    out = model(batch, scores, topic)
    assert out.shape == (batch.num_entities,)
    assert out.device.type == device.type
    path = tmp_path / "reader.pt"
    torch.save(model.checkpoint(embedder_model_id="m"), path)
    loaded = EntityReader.from_checkpoint(path).to(device)
    torch.testing.assert_close(loaded(batch, scores, topic), out)


def test_entity_reader_shares_no_text_vector() -> None:
    torch.manual_seed(0)
    model = EntityReader(ReaderConfig(emb_dim=D, hidden=16)).eval()
    batch = random_batch(5)
    scores = torch.rand(batch.num_triples)
    emb = batch.entity_emb.clone()
    emb[~batch.has_text] += 50.0
    changed = dataclasses.replace(batch, entity_emb=emb)
    topic = torch.tensor([0])
    torch.testing.assert_close(model(changed, scores, topic), model(batch, scores, topic))
    model.train()
    model(batch, scores, topic).sum().backward()
    assert model.no_text.grad is not None and model.no_text.grad.abs().sum() > 0


def test_incident_relation_context_is_score_weighted_mean_per_end() -> None:
    from kgqa.reasoning.extractive import incident_relation_context

    relation_emb = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # triples: 0 -r0-> 1 (score 0.75), 2 -r1-> 1 (score 0.25), 1 -r1-> 3 (score 1.0)
    batch = ScorerBatch(
        question=torch.zeros(2),
        entity_emb=torch.zeros(4, 2),
        has_text=torch.ones(4, dtype=torch.bool),
        relation_emb=relation_emb,
        head=torch.tensor([0, 2, 1]),
        rel=torch.tensor([0, 1, 1]),
        tail=torch.tensor([1, 1, 3]),
        dde=torch.zeros(4, 10),
    )
    context = incident_relation_context(torch.tensor([0.75, 0.25, 1.0]), batch)
    expected = torch.tensor(
        [
            [0.0, 0.0, 1.0, 0.0],  # entity 0: no incoming; outgoing r0
            [0.75, 0.25, 0.0, 1.0],  # entity 1: incoming 0.75*r0 + 0.25*r1 over 1.0; outgoing r1
            [0.0, 0.0, 0.0, 1.0],  # entity 2: outgoing r1
            [0.0, 1.0, 0.0, 0.0],  # entity 3: incoming r1
        ]
    )
    assert torch.allclose(context, expected)


def test_path_features_give_reach_its_log_and_inward_outward_scores() -> None:
    from kgqa.reasoning.extractive import path_features

    # Topic 0; triples 0 -> 1 (0.5), 1 -> 2 (0.1), 3 -> 1 (0.7), 2 -> 4 (0.9).
    # Hop distances 0, 1, 2, 2, 3; reach 1, 0.5, 0.05, 0.35, 0.045; entity 5 is unreachable.
    batch = ScorerBatch(
        question=torch.zeros(2),
        entity_emb=torch.zeros(6, 2),
        has_text=torch.ones(6, dtype=torch.bool),
        relation_emb=torch.zeros(1, 2),
        head=torch.tensor([0, 1, 3, 2]),
        rel=torch.tensor([0, 0, 0, 0]),
        tail=torch.tensor([1, 2, 1, 4]),
        dde=torch.zeros(6, 10),
    )
    feats = path_features(torch.tensor([0.5, 0.1, 0.7, 0.9]), batch, torch.tensor([0]))
    reach = torch.tensor([1.0, 0.5, 0.05, 0.35, 0.045, 0.0])
    torch.testing.assert_close(feats[:, 0], reach)
    # 1 - log(reach) / log(1e-6): 1 at a topic, 0 at (or below) the floor.
    floor = torch.tensor(1e-6)
    torch.testing.assert_close(feats[:, 1], 1 - torch.log(reach.clamp(min=1e-6)) / torch.log(floor))
    # Entity 1 is entered from the topic (0.5) and left towards 2 (0.1) and 3 (0.7).
    torch.testing.assert_close(feats[:, 2], torch.tensor([0.0, 0.5, 0.1, 0.7, 0.9, 0.0]))
    torch.testing.assert_close(feats[:, 3], torch.tensor([0.5, 0.7, 0.9, 0.0, 0.0, 0.0]))
