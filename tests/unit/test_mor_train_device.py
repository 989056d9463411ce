"""MoR training on a device (``MorTrainSettings.device``, from ``runtime.device``): the reranker
comes back on the CPU, the same on the CPU device as by default, and on CUDA within float
tolerance of the CPU's: its candidates' softmax after one epoch (not its weights: the listwise
loss ignores a shift of all logits, so the output bias's gradient is float noise, which Adam
turns into steps of the learning rate, the sign differing by device), and its validation
metrics and best epoch after eight."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgqa.retrieval.mor.reranker import FEATURES, TrajectoryReranker
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


def _states(
    device: str, epochs: int = SETTINGS.reranker_epochs
) -> tuple[TrajectoryReranker, dict[str, float], int]:
    settings = replace(SETTINGS, device=device, reranker_epochs=epochs)
    model, val, epoch = train_reranker(_questions(12, 0), _questions(6, 1), settings)
    assert all(p.device.type == "cpu" for p in model.parameters())
    return model, val, epoch


def test_training_on_the_cpu_device_is_the_default_training() -> None:
    default, val, epoch = train_reranker(_questions(12, 0), _questions(6, 1), SETTINGS)
    on_cpu, val_cpu, epoch_cpu = _states("cpu")
    assert (val, epoch) == (val_cpu, epoch_cpu)
    for name, weights in default.state_dict().items():
        assert torch.equal(weights, on_cpu.state_dict()[name]), name


@pytest.mark.gpu
def test_cuda_training_gives_the_cpu_reranker_within_tolerance() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    cpu, cuda = _states("cpu", 1)[0], _states("cuda", 1)[0]
    with torch.no_grad():
        for question in _questions(6, 1):
            for run in question.runs:
                torch.testing.assert_close(
                    torch.softmax(cuda(run.x), 0), torch.softmax(cpu(run.x), 0), atol=1e-4, rtol=0
                )
    _, cpu_val, cpu_epoch = _states("cpu")
    _, cuda_val, cuda_epoch = _states("cuda")
    assert cuda_epoch == cpu_epoch
    assert cuda_val == pytest.approx(cpu_val, abs=1e-6)
