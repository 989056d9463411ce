"""Throughput benchmark (issue 17): embedding, ingest, eval, retrieval latency, training; one table.

Each measurement runs in its own Python process (so peak RSS and start-up are its own) with the
same thread budget (``KGQA_THREADS``, else ``OMP_NUM_THREADS``, else all cores) given to torch,
OpenMP and the tokenizers through the environment; within it each process gives torch what that
tree's commands would (bulk embedding the budget, question work ``runtime.question_threads``
where the tree has it). ``--against REV`` runs the same measurements
on the code of git revision REV (exported to a temporary directory and put first on the
import path) and adds the ratio this tree / REV per row: the previous code path, measured the
same way on the same machine. Every row records the load average before and after it: on a
shared machine, compare only rows measured under similar load.

Sizes: ``small`` (smoke test, ~2 min) ingests the bundled quick-start slice, trains a tiny
checkpoint on it and evaluates its questions; ``full`` ingests the whole MetaQA KB, evaluates
``--eval-limit`` held-out questions per hop on ``--data-dir`` (a store with a trained
``retriever.pt``, read only), and trains ``--train-limit`` questions per file for
``--train-epochs`` epochs on it (checkpoint and example cache in a temporary directory).
Both sizes also time a whole ``kgqa eval`` of the 2-hop questions (loading included) in one
process and in ``--eval-workers`` processes (``kgqa eval --set eval.workers=N``), where the tree has it.

``--only`` runs some of the measurements (e.g. ``--only eval,eval_workers``: no ingest, no training).
The eval row runs as ``kgqa eval`` does where the tree batches questions (``eval.batch_size`` of them
retrieved together, the batches' shared work on the whole thread budget).

usage: python -m bench.throughput [--size small|full] [--against REV] [--only NAMES] [--out FILE]
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from bench.common import REPO, SHARED_DATA, append_jsonl, environment, markdown_table, out_option

# The parent pins the data paths for its children: an exported revision's bench.common would
# look for the shared data beside the temporary directory it was exported into.
_SHARED = Path(os.environ.get("BENCH_SHARED_DATA", SHARED_DATA))
EXAMPLES = Path(os.environ.get("BENCH_EXAMPLES", REPO / "examples" / "metaqa_movies"))
METAQA = _SHARED / "metaqa"
#: How far every question is walked, in this tree and the one it is measured against: no hop count
#: comes from the question files, and older trees defaulted to 2.
HOPS = 3
HPO_NODES = _SHARED / "hpo" / "kg" / "nodes.csv.gz"
SIZES: dict[str, dict[str, Any]] = {
    "small": {"names": 500, "texts": 50, "questions": 30, "kb": EXAMPLES / "kb.txt"},
    "full": {"names": 10_000, "texts": 1_000, "questions": 200, "kb": METAQA / "kb.txt.gz"},
}


# ----------------------------------------------------------------------------- measurements
# Each runs in a child process on whichever tree is first on sys.path; only APIs present in the
# compared revisions are used.


def _metaqa_names(n: int) -> list[str]:
    import gzip
    import random

    source = METAQA / "kb.txt.gz"
    if source.is_file():
        with gzip.open(source, "rt", encoding="utf-8") as fh:
            lines = list(fh)
    else:
        lines = (EXAMPLES / "kb.txt").read_text(encoding="utf-8").splitlines()
    names = sorted({part for line in lines for part in line.rstrip("\n").split("|")[::2]})
    return random.Random(0).sample(names, min(n, len(names)))


def _hpo_texts(n: int) -> list[str]:
    import csv
    import gzip
    import random

    if not HPO_NODES.is_file():
        return []
    with gzip.open(HPO_NODES, "rt", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    picked = random.Random(0).sample(rows, min(n, len(rows)))
    return [f"{r['name']}: {r['text']}" if r["text"] else r["name"] for r in picked]


def _questions(n: int) -> list[tuple[str, str]]:
    """(question, topic) pairs of MetaQA 2-hop (the bundled slice without the shared data)."""
    import re

    source = METAQA / "2-hop" / "qa_dev.txt"
    lines = (
        (source if source.is_file() else EXAMPLES / "questions.txt").read_text(encoding="utf-8").splitlines()
    )
    pairs = []
    for line in lines[:n]:
        question = line.split("\t")[0]
        topic = re.search(r"\[([^\]]+)\]", question)
        pairs.append((question.replace("[", "").replace("]", ""), topic.group(1) if topic else ""))
    return pairs


def measure_embedding(size: str, work: Path) -> dict[str, Any]:
    """Names/s and texts/s over a fixed sample; question embedding (its planner views) p50 ms."""
    import importlib
    import statistics

    from kgqa.config import EmbedderSettings
    from kgqa.embed import make_embedder
    from kgqa.retrieval.models.plans import question_views

    spec = SIZES[size]
    embedder = make_embedder(EmbedderSettings(device="cpu"))
    names, texts = _metaqa_names(spec["names"]), _hpo_texts(spec["texts"])
    embedder.embed(names[:64])  # warm-up
    out: dict[str, Any] = {}
    for label, items in (("names", names), ("hpo_texts", texts)):
        if not items:
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        embedder.embed(items)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out[f"embed_{label}_per_s"] = len(items) / wall
        out[f"embed_{label}_per_cpu_s"] = len(items) / cpu
    _set_threads(bulk=False)
    # As retrieval embeds them: each distinct view once, where the tree does that.
    distinct = getattr(importlib.import_module("kgqa.retrieval.retriever"), "embed_distinct", None)
    times = []
    for question, topic in _questions(spec["questions"]):
        views = list(question_views(question, [topic]))
        started = time.perf_counter()
        distinct(embedder, views) if distinct else embedder.embed(views)
        times.append((time.perf_counter() - started) * 1e3)
    out["question_embed_p50_ms"] = statistics.median(times)
    return out


def measure_ingest(size: str, work: Path) -> dict[str, Any]:
    """Load, embed and index the size's KB into a fresh embedded store under ``work``."""
    from ingest.pipeline import ingest_source
    from kgqa.config import load_config

    store = work / "store"
    settings = load_config(
        {"store": {"data_dir": str(store)}, "embedder": {"device": "cpu"}}, environ={}
    ).settings
    started = time.perf_counter()
    result = ingest_source(settings, SIZES[size]["kb"], "metaqa", options={}, force=False, progress=False)
    assert result.embedding is not None
    return {
        "ingest_s": time.perf_counter() - started,
        "ingest_embed_per_s": result.embedding.entities_per_second,
        "ingest_entities": result.embedding.entities_embedded,
    }


def _train_once(settings: Any, files: list[Path], out: Path, limit: int, epochs: int, cache: Path) -> float:
    from dataclasses import replace

    from kgqa.eval.splits import SplitSettings
    from kgqa.pipeline import subgraph_settings
    from retriever_training.run import run_training
    from retriever_training.train import TrainSettings

    parameters = inspect.signature(run_training).parameters
    extra = {"cache_dir": cache} if "cache_dir" in parameters else {}
    # The reader is timed too, however few the questions (older trees train one always).
    known = TrainSettings.__dataclass_fields__
    reader = {"reader_min_questions": 0} if "reader_min_questions" in known else {}
    # No hop count from the files: every question walked HOPS far (older trees call it auto_hops).
    extra["oracle_hops" if "oracle_hops" in parameters else "auto_hops"] = False
    started = time.perf_counter()
    run_training(
        settings,
        [(f, "metaqa") for f in files],
        out,
        subgraph=replace(subgraph_settings(settings), hops=HOPS),
        split=SplitSettings(0.2, 0.1, 0),
        train_settings=TrainSettings(
            epochs=epochs, patience=epochs, scorer_hidden=64, reader_hidden=64, **reader
        ),
        limit=limit,
        progress=False,
        **extra,
    )
    return time.perf_counter() - started


def _cpu_settings(store: Path, checkpoint: Path) -> Any:
    """Settings over ``store`` with ``checkpoint`` on the CPU, no environment read."""
    from kgqa.config import load_config

    return load_config(
        {
            "store": {"data_dir": str(store)},
            "embedder": {"device": "cpu"},
            "retrieval": {"checkpoint": str(checkpoint)},
        },
        environ={},
    ).settings


def measure_training(size: str, work: Path, data_dir: Path, limit: int, epochs: int) -> dict[str, Any]:
    """Train twice on the same questions: the second run may reuse prepared examples."""

    if size == "small":
        store, files, limit, epochs = work / "store", [EXAMPLES / "questions.txt"], 40, 2
    else:
        store, files = data_dir, [METAQA / f"{h}-hop" / "qa_dev.txt" for h in (1, 2, 3)]
    out = work / "train" / "retriever.pt"
    settings = _cpu_settings(store, out)
    first = _train_once(settings, files, out, limit, epochs, work / "train" / "cache")
    second = _train_once(settings, files, out, limit, epochs, work / "train" / "cache")
    return {
        "train_s": first,
        "train_rerun_s": second,
        "train_size": f"{limit}/file x{len(files)}, {epochs} ep",
    }


def measure_eval(size: str, work: Path, data_dir: Path, limit: int) -> dict[str, Any]:
    """Start-up (process start to the first embedded text), then questions/s and retrieval p50/p95
    per hop."""
    from kgqa.eval.datasets import read_questions
    from kgqa.eval.run import evaluate
    from kgqa.eval.session import select
    from kgqa.pipeline import open_asker

    if size == "small":
        store, checkpoint = work / "store", work / "train" / "retriever.pt"
        files = {2: EXAMPLES / "questions.txt"}
    else:
        store, checkpoint = data_dir, data_dir / "retriever.pt"
        files = {h: METAQA / f"{h}-hop" / "qa_dev.txt" for h in (1, 2, 3)}
    settings = _cpu_settings(store, checkpoint)
    # As `kgqa eval` runs it where the tree batches questions: the run's whole thread budget for
    # the batches' shared work.
    batching = {"threads": int(os.environ["OMP_NUM_THREADS"])}
    if "threads" not in inspect.signature(evaluate).parameters:
        batching = {}
    out: dict[str, Any] = {}
    with open_asker(settings) as asker:
        asker.retriever.embedder.embed(["start-up"])  # the model may still be loading: wait for it
        out["eval_startup_s"] = time.perf_counter() - PROCESS_START
        for hop, path in files.items():
            if size == "small":
                examples = list(read_questions(path, "metaqa"))[:limit]
            else:
                examples = select(settings, path, "metaqa", limit=limit, lines_file=None, heldout=True)
            started = time.perf_counter()
            summary = evaluate(asker, examples, log_path=None, hops_of=lambda e: HOPS, **batching)
            seconds = time.perf_counter() - started
            out[f"eval_{hop}hop_q_per_s"] = len(examples) / seconds
            total = summary.latency_ms["retrieval_total"]
            out[f"retrieval_{hop}hop_p50_ms"] = total["p50"]
            out[f"retrieval_{hop}hop_p95_ms"] = total["p95"]
            out[f"eval_{hop}hop_hit_at_1"] = summary.reader["hit_at_1"]
    return out


def measure_eval_workers(size: str, work: Path, data_dir: Path, limit: int, workers: int) -> dict[str, Any]:
    """A whole ``kgqa eval`` run of the 2-hop questions (model loading and store opening included)
    in one process and in ``workers`` processes; nothing on a tree without ``--workers``."""
    from kgqa.eval.session import run_eval

    if "workers" not in inspect.signature(run_eval).parameters:
        return {}
    if size == "small":
        store, checkpoint, path, heldout = (
            work / "store",
            work / "train" / "retriever.pt",
            EXAMPLES / "questions.txt",
            False,
        )
    else:
        store, checkpoint = data_dir, data_dir / "retriever.pt"
        path, heldout = METAQA / "2-hop" / "qa_dev.txt", True
    settings = _cpu_settings(store, checkpoint)
    out: dict[str, Any] = {}
    for n in (1, workers):
        started = time.perf_counter()
        summary = run_eval(
            settings, path, "metaqa", limit=limit, lines_file=None, heldout=heldout, hops=str(HOPS),
            log_path=None, progress=False, workers=n,
        )  # fmt: skip
        out[f"eval_2hop_whole_run_workers{n}_q_per_s"] = (summary.n + summary.failed) / (
            time.perf_counter() - started
        )
    return out


PROCESS_START = time.perf_counter()


def _set_threads(*, bulk: bool) -> None:
    """Give torch the threads this tree's commands give such work, within the run's budget
    (``OMP_NUM_THREADS``, set by the parent): trees with ``command_threads`` run question work on
    ``runtime.question_threads``, older ones on the whole budget."""
    import torch

    import kgqa.threads

    budget = int(os.environ["OMP_NUM_THREADS"])
    if hasattr(kgqa.threads, "command_threads"):
        from kgqa.config import RuntimeSettings

        budget = kgqa.threads.command_threads(budget, RuntimeSettings().question_threads, bulk=bulk)
    torch.set_num_threads(budget)


# ----------------------------------------------------------------------------- driver


def _child(name: str, tree: Path, args: dict[str, Any], threads: int) -> dict[str, Any]:
    """Run measurement ``name`` in a fresh process on ``tree``'s code; its JSON plus load and RSS."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(tree), str(REPO)])),
        **{k: str(threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")},
        "BENCH_SHARED_DATA": str(_SHARED),
        "BENCH_EXAMPLES": str(EXAMPLES),
    }
    load_before = os.getloadavg()[0]
    proc = subprocess.run(
        [sys.executable, "-m", "bench.throughput", "--child", name, "--child-args", json.dumps(args)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise click.ClickException(f"{name} on {tree} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result[f"{name}_load"] = f"{load_before:.1f}->{os.getloadavg()[0]:.1f}"
    return result


def _child_main(name: str, args: dict[str, Any]) -> None:
    import resource

    _set_threads(bulk=name in ("embedding", "ingest"))
    work = Path(args.pop("work"))
    if "data_dir" in args:  # JSON carries paths as strings
        args["data_dir"] = Path(args["data_dir"])
    measures: dict[str, Callable[..., dict[str, Any]]] = {
        "embedding": measure_embedding,
        "ingest": measure_ingest,
        "training": measure_training,
        "eval": measure_eval,
        "eval_workers": measure_eval_workers,
    }
    result = measures[name](work=work, **args)
    result[f"{name}_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def _export(rev: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    # The harness is this file on both sides: only the measured code comes from REV.
    harness = Path(__file__).read_text(encoding="utf-8")
    (into / "bench" / "throughput.py").write_text(harness, encoding="utf-8")
    return into


#: The measurements, in the order they run (``--only`` picks some).
MEASUREMENTS = ("embedding", "ingest", "training", "eval", "eval_workers")


def _run_all(
    tree: Path, size: str, opts: dict[str, Any], threads: int, work: Path, only: Sequence[str]
) -> dict[str, Any]:
    base = {"size": size, "work": str(work)}
    data = {**base, "data_dir": opts["data_dir"]}
    args = {
        "embedding": base,
        "ingest": base,
        "training": {**data, "limit": opts["train_limit"], "epochs": opts["train_epochs"]},
        "eval": {**data, "limit": opts["eval_limit"]},
        "eval_workers": {**data, "limit": opts["eval_limit"], "workers": opts["eval_workers"]},
    }
    results: dict[str, Any] = {}
    for name in only:
        results |= _child(name, tree, args[name], threads)
    return results


@click.command()
@click.option("--size", type=click.Choice(sorted(SIZES)), default="small", show_default=True)
@click.option("--against", "rev", help="Also measure git revision REV (e.g. main) and print ratios.")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kgqa-data"),
    show_default=True,
    help="full: embedded store of the full MetaQA KB with its retriever.pt (opened read only).",
)
@click.option("--eval-limit", type=int, default=300, show_default=True, help="Held-out questions per hop.")
@click.option("--train-limit", type=int, default=300, show_default=True, help="full: questions per file.")
@click.option("--train-epochs", type=int, default=2, show_default=True)
@click.option(
    "--eval-workers",
    type=click.IntRange(min=2),
    default=2,
    show_default=True,
    help="Processes of the whole-run eval row (kgqa eval --set eval.workers=N), against one process.",
)
@click.option(
    "--only",
    default=",".join(MEASUREMENTS),
    show_default=True,
    help="Comma-separated measurements to run, of those shown.",
)
@out_option("throughput")
@click.option("--child", hidden=True)
@click.option("--child-args", hidden=True)
def main(
    size: str,
    rev: str | None,
    data_dir: Path,
    eval_limit: int,
    train_limit: int,
    train_epochs: int,
    eval_workers: int,
    only: str,
    out: Path,
    child: str | None,
    child_args: str | None,
) -> None:
    """Measure embedding, ingest, training and eval throughput; compare with REV when given."""
    if child:
        _child_main(child, json.loads(child_args or "{}"))
        return
    chosen = [name.strip() for name in only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(MEASUREMENTS))
    if unknown or not chosen:
        raise click.BadParameter(f"{', '.join(unknown) or 'nothing'}; choose among {', '.join(MEASUREMENTS)}")
    threads = int(
        os.environ.get("KGQA_THREADS") or os.environ.get("OMP_NUM_THREADS") or len(os.sched_getaffinity(0))
    )
    opts = {
        "data_dir": str(data_dir),
        "eval_limit": eval_limit,
        "train_limit": train_limit,
        "train_epochs": train_epochs,
        "eval_workers": eval_workers,
    }
    if size == "small":
        opts["eval_limit"] = min(eval_limit, 30)
    columns: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        columns["this tree"] = _run_all(REPO, size, opts, threads, Path(tmp) / "new", chosen)
        if rev:
            old = _export(rev, Path(tmp) / "rev")
            columns[rev] = _run_all(old, size, opts, threads, Path(tmp) / "old", chosen)
    # Imported here, in the parent, which runs this tree: a child runs this file inside an exported
    # revision whose bench.common may predate comparison_rows.
    from bench.common import comparison_rows

    header = ["metric", *columns, *([f"ratio this / {rev}"] if rev else [])]
    rows = comparison_rows(columns, ratio=bool(rev))
    click.echo(f"threads {threads}, size {size}; *_load: 1-min load average before->after each process")
    click.echo(markdown_table(header, rows))
    append_jsonl(
        out,
        {
            **environment("cpu"),
            "size": size,
            "threads": threads,
            "against": rev,
            "only": chosen,
            **opts,
            "results": columns,
        },
    )


if __name__ == "__main__":
    main()
