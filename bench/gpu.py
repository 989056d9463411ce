"""GPU benchmark (issue 31): the device against the CPU of the same machine, one table.

For each column (``cuda`` where present, and ``cpu``) it measures, in that order: bulk name
embedding (names/s), one question's embedding (its planner views, mean ms), a planner training
step of 16 questions scored one pass each and in one pass (ms), ``kgqa train``'s
default recipe on MetaQA (seconds per model: prepare, triple scorer, second pass, planner,
reader), and held-out evaluation of the 2-hop questions with the extractive reader (questions/s
and Hit@1); on the device also the peak GPU memory (``torch.cuda.max_memory_allocated``). The
models, features and batches follow ``runtime.device``; the store and its Cypher stay on the
CPU. On a machine without CUDA it says so and prints the CPU column only. Threads as ``kgqa``
runs them: question work (training steps, eval) on ``runtime.question_threads`` within the
budget (``KGQA_THREADS``, else every core), bulk embedding on the whole budget, and the planner
in a second process beside the scorers where the budget allows. Each measurement is printed to
stderr as it lands, so a run cut short by a time limit keeps what it measured.

Sizes: ``full`` trains ``--train-limit`` questions per file (default 300: both columns within 8
minutes on a 16-core GPU machine; ``kgqa train``'s default recipe is 1000) on ``--data-dir`` (an
ingested MetaQA store, read only; checkpoints go to a temporary directory) and evaluates
``--eval-limit`` held-out 2-hop questions; ``small`` (smoke test) ingests the bundled quick-start
slice into a temporary store, trains 40 questions for 2 epochs and evaluates 30.

usage: python -m bench.gpu [--size small|full] [--data-dir DIR] [--no-cpu] [--out FILE]
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from bench.common import (
    REPO,
    SHARED_DATA,
    append_jsonl,
    bench_threads,
    comparison_rows,
    environment,
    markdown_table,
    out_option,
    thread_budget,
)

METAQA = SHARED_DATA / "metaqa"
EXAMPLES = REPO / "examples" / "metaqa_movies"
SIZES: dict[str, dict[str, Any]] = {
    "small": {"names": 500, "questions": 20, "epochs": 2},
    "full": {"names": 20_000, "questions": 200, "epochs": None},
}


def _settings(store: Path, checkpoint: Path, device: str, budget: int) -> Any:
    """Settings over ``store`` and ``checkpoint`` with the embedder and models on ``device`` and a
    thread budget of ``budget``."""
    from kgqa.config import load_config

    return load_config(
        {
            "store": {"data_dir": str(store)},
            "embedder": {"device": device},
            "retrieval": {"checkpoint": str(checkpoint)},
            "runtime": {"device": device, "threads": budget},
        },
        environ={},
    ).settings


def measure_embedding(device: str, size: str, budget: int) -> dict[str, Any]:
    """Names/s of one bulk call over a fixed sample of MetaQA names (on ``budget`` threads, as
    ingest embeds); mean ms of one question's views (on the question threads, as ask does)."""
    from bench.throughput import _metaqa_names, _questions
    from kgqa.config import EmbedderSettings
    from kgqa.embed import make_embedder
    from kgqa.retrieval.models.plans import question_views
    from kgqa.retrieval.retriever import embed_distinct
    from kgqa.threads import torch_threads

    spec = SIZES[size]
    embedder = make_embedder(EmbedderSettings(device=device))
    names = _metaqa_names(spec["names"])
    with torch_threads(budget):
        embedder.embed(names[:256])  # warm-up: model load, kernels
        started = time.perf_counter()
        embedder.embed(names)
        names_per_s = len(names) / (time.perf_counter() - started)
    times = []
    for question, topic in _questions(spec["questions"]):
        started = time.perf_counter()
        embed_distinct(embedder, list(question_views(question, [topic])))
        times.append((time.perf_counter() - started) * 1e3)
    return {"embed_names_per_s": names_per_s, "question_embed_ms": statistics.mean(times)}


def measure_training(
    device: str, store: Path, files: list[Path], out: Path, size: str, limit: int, budget: int
) -> dict[str, Any]:
    """``kgqa train``'s recipe (defaults, ``limit`` per file) on ``device``: seconds per stage."""
    from kgqa.eval.splits import SplitSettings
    from kgqa.pipeline import subgraph_settings
    from retriever_training.run import run_training
    from retriever_training.train import TrainSettings

    settings = _settings(store, out, device, budget)
    epochs = SIZES[size]["epochs"]
    train_settings = TrainSettings() if epochs is None else TrainSettings(epochs=epochs, patience=epochs)
    started = time.perf_counter()
    report = run_training(
        settings,
        [(f, "metaqa") for f in files],
        out,
        subgraph=subgraph_settings(settings),
        oracle_hops=False,
        split=SplitSettings(0.2, 0.1, 0),
        # every model is timed, the reader too, however few the questions (--size small)
        train_settings=replace(
            train_settings,
            min_epochs=min(train_settings.min_epochs, train_settings.epochs),
            reader_min_questions=0,
        ),
        limit=limit,
        progress=False,
    )
    result = {f"train_{stage}_s": seconds for stage, seconds in report.seconds.items()}
    result["train_total_s"] = time.perf_counter() - started
    return result


def measure_eval(
    device: str, store: Path, checkpoint: Path, path: Path, limit: int, heldout: bool, budget: int
) -> dict[str, Any]:
    """Questions/s and Hit@1 of the extractive reader on ``limit`` questions of ``path``, as
    ``kgqa eval`` runs them (``eval.batch_size`` retrieved together, the batches' shared work on
    the ``budget`` threads)."""
    from kgqa.eval.datasets import read_questions
    from kgqa.eval.run import evaluate
    from kgqa.eval.session import select
    from kgqa.pipeline import open_asker

    settings = _settings(store, checkpoint, device, budget)
    with open_asker(settings) as asker:
        asker.retriever.embedder.embed(["warm-up"])
        if heldout:
            examples = select(settings, path, "metaqa", limit=limit, lines_file=None, heldout=True)
        else:
            examples = list(read_questions(path, "metaqa"))[:limit]
        started = time.perf_counter()
        summary = evaluate(
            asker,
            examples,
            log_path=None,
            hops_of=lambda _: settings.retrieval.hops,
            batch=settings.eval.batch_size,
            threads=budget,
        )
        seconds = time.perf_counter() - started
    return {"eval_q_per_s": len(examples) / seconds, "eval_hit_at_1": summary.reader["hit_at_1"]}


def measure_planner_step(device: str, steps: int = 20) -> dict[str, Any]:
    """Mean ms of one planner training step over 16 synthetic MetaQA-sized questions (300 plans
    of 3 steps over 30 relations, 384-d views), one pass per question against one pass for the
    step (``retriever_training.train``'s two ways of scoring a step's plans). Needs no store."""
    import torch

    from kgqa.retrieval.models.plans import QUESTION_VIEWS, PlannerConfig, PlanScorer
    from retriever_training.train import PlanChoice, _plans_scored_alone, _plans_scored_together

    generator = torch.Generator().manual_seed(0)
    choices: list[PlanChoice | None] = []
    for _ in range(16):
        plans = torch.randint(0, 60, (300, 3), generator=generator)
        gold = torch.zeros(300, dtype=torch.bool)
        gold[:2] = True
        views, relations = torch.randn(QUESTION_VIEWS, 384, generator=generator), torch.randn(30, 384)
        choices.append(PlanChoice(views, None, relations, plans, gold))
    model = PlanScorer(PlannerConfig(emb_dim=384, max_steps=3, name_match=True)).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    out = {}
    for name, scored in (("alone", _plans_scored_alone), ("together", _plans_scored_together)):
        for i in range(steps + 3):
            if i == 3:  # after the warm-up
                if device == "cuda":
                    torch.cuda.synchronize()
                started = time.perf_counter()
            losses = torch.stack([r[1] for r in scored(model, choices, device) if r is not None])
            optimiser.zero_grad()
            losses.mean().backward()
            optimiser.step()
        if device == "cuda":
            torch.cuda.synchronize()
        out[f"planner_step_ms_{name}"] = (time.perf_counter() - started) / steps * 1e3
    return out


def measure_column(
    device: str, size: str, data_dir: Path, train_limit: int, eval_limit: int, work: Path, budget: int
) -> dict[str, Any]:
    """Every measurement on ``device``, with the peak GPU memory of the whole column on CUDA."""
    import torch

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    out: dict[str, Any] = _shown(device, measure_embedding(device, size, budget))
    out |= _shown(device, measure_planner_step(device))
    checkpoint = work / device / "retriever.pt"
    if size == "small":
        store, files, path, heldout = (
            work / "store",
            [EXAMPLES / "questions.txt"],
            EXAMPLES / "questions.txt",
            False,
        )
        train_limit, eval_limit = 40, 30
    else:
        store, files = data_dir, [METAQA / f"{h}-hop" / "qa_dev.txt" for h in (1, 2, 3)]
        path, heldout = METAQA / "2-hop" / "qa_dev.txt", True
    out |= _shown(device, measure_training(device, store, files, checkpoint, size, train_limit, budget))
    out |= _shown(device, measure_eval(device, store, checkpoint, path, eval_limit, heldout, budget))
    if device == "cuda":
        out["peak_gpu_memory_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return out


def _shown(device: str, measured: dict[str, Any]) -> dict[str, Any]:
    """``measured``, printed at once to stderr: a run cut short by a time limit keeps what it
    measured before."""
    click.echo(f"{device}: {json.dumps({k: round(v, 3) for k, v in measured.items()})}", err=True)
    return measured


def _ingest_slice(store: Path) -> None:
    """The bundled quick-start slice into a fresh embedded store (``small``)."""
    from ingest.pipeline import ingest_source
    from kgqa.config import load_config

    settings = load_config(
        {"store": {"data_dir": str(store)}, "embedder": {"device": "cpu"}}, environ={}
    ).settings
    ingest_source(settings, EXAMPLES / "kb.txt", "metaqa", options={}, force=False, progress=False)


@click.command()
@click.option("--size", type=click.Choice(sorted(SIZES)), default="full", show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kgqa-data"),
    show_default=True,
    help="full: embedded store of the whole MetaQA KB (read only).",
)
@click.option("--train-limit", type=int, default=300, show_default=True, help="full: questions per file.")
@click.option(
    "--eval-limit", type=int, default=300, show_default=True, help="full: held-out 2-hop questions."
)
@click.option(
    "--cpu/--no-cpu",
    "with_cpu",
    default=True,
    show_default=True,
    help="Measure the CPU column too (--no-cpu: the device alone, where time is short).",
)
@out_option("gpu")
def main(size: str, data_dir: Path, train_limit: int, eval_limit: int, with_cpu: bool, out: Path) -> None:
    """Measure embedding, training and eval on the device against the CPU of this machine."""
    import torch

    budget = thread_budget()
    bench_threads()  # question work on the question threads, as kgqa train and eval run it
    devices = ["cuda"] if torch.cuda.is_available() else []
    if with_cpu or not devices:
        devices.append("cpu")
    if "cuda" not in devices:
        click.echo("no CUDA device on this machine: the CPU column only", err=True)
    columns: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if size == "small":
            _ingest_slice(work / "store")
        for device in devices:
            columns[device] = measure_column(device, size, data_dir, train_limit, eval_limit, work, budget)
    both = len(columns) == 2
    rows = comparison_rows(columns, ratio=both)  # columns: cuda first, then cpu
    header = ["metric", *columns, *(["cuda / cpu"] if both else [])]
    click.echo(f"size {size}, threads {budget} (questions on {torch.get_num_threads()})")
    click.echo(markdown_table(header, rows))
    append_jsonl(out, {**environment(devices[0]), "size": size, "results": columns})


if __name__ == "__main__":
    main()
