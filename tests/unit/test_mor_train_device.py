"""MoR training on a device (``MorTrainSettings.device``, from ``runtime.device``): the reranker
comes back on the CPU, the same on the CPU device as by default, and on CUDA within float
tolerance of the CPU's."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgqa.retrieval.mor.reranker import FEATURES
from retriever_training.mor import MorTrainSettings, _Question, _Run, train_reranker

SETTINGS = MorTrainSettings(reranker_epochs=8, patience=8, hidden=8, seed=0)


def _questions(n: int, seed: int) -> list[_Question]:
    """``n`` questions of two runs each, whose gold candidate has the largest first feature: a
    ranking the reranker can learn."""
    generator = torch.Generator().manual_seed(seed)
    questions = []
    for q in range(n):
        runs = []
        for r in range(2):
            x = torch.rand(5, len(FEATURES), generator=generator)
            positive = x[:, 0] == x[:, 0].max()
            runs.append(_Run(x, positive, [f"q{q}r{r}c{i}" for i in range(5)], 0.5))
        gold = tuple(i for run in runs for i, p in zip(run.ids, run.positive.tolist(), strict=True) if p)
        questions.append(_Question(runs, gold))
    return questions


def _states(device: str) -> tuple[dict[str, torch.Tensor], dict[str, float], int]:
    model, val, epoch = train_reranker(_questions(12, 0), _questions(6, 1), replace(SETTINGS, device=device))
    assert all(p.device.type == "cpu" for p in model.parameters())
    return model.state_dict(), val, epoch


def test_training_on_the_cpu_device_is_the_default_training() -> None:
    default, val, epoch = train_reranker(_questions(12, 0), _questions(6, 1), SETTINGS)
    on_cpu, val_cpu, epoch_cpu = _states("cpu")
    assert (val, epoch) == (val_cpu, epoch_cpu)
    for name, weights in default.state_dict().items():
        assert torch.equal(weights, on_cpu[name]), name


@pytest.mark.gpu
def test_cuda_training_gives_the_cpu_reranker_within_tolerance() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    cpu, cpu_val, cpu_epoch = _states("cpu")
    cuda, cuda_val, cuda_epoch = _states("cuda")
    assert cuda_epoch == cpu_epoch
    assert cuda_val == pytest.approx(cpu_val, abs=1e-6)
    for name, weights in cpu.items():
        torch.testing.assert_close(cuda[name], weights, rtol=1e-3, atol=1e-4, msg=name)
