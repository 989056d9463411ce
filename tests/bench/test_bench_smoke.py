"""Each benchmark runs end to end at its smallest size (numbers are not checked, only produced).

The retrieval and ask benchmarks need the whole MetaQA KB loaded and a trained checkpoint, which
no test builds; they are exercised by hand (see README, Benchmarks).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]


def _bench(name: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """``python -m bench.<name> ARGS`` from the repository root; it must exit 0."""
    command = [sys.executable, "-m", f"bench.{name}", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _run_bench(name: str, out: Path, *args: str) -> str:
    return _bench(name, "--size", "tiny", "--repeat", "1", "--out", str(out), *args).stdout


def test_pooling_bench_prints_both_tables_and_records_a_row(tmp_path: Path) -> None:
    out = tmp_path / "pooling.jsonl"
    stdout = _run_bench("pooling", out)
    assert "| triples | kernel | median ms |" in stdout and "flow-path pruning" in stdout
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["git_sha"] and row["results"] and row["flow_results"]


def test_bolt_decode_bench_times_each_shape_and_records_a_row(tmp_path: Path) -> None:
    out = tmp_path / "bolt_decode.jsonl"
    stdout = _run_bench("bolt_decode", out)
    assert "| entities | shape | MiB on the wire | decode ms |" in stdout
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    sizes = {r["shape"]: r["bytes"] for r in row["results"]}
    assert sizes["score"] < sizes["vector"] < sizes["list"]  # 9 bytes a score, 4 a float32, 9 a float


@pytest.mark.slow
def test_ingest_bench_loads_the_bundled_slice(tmp_path: Path) -> None:
    out = tmp_path / "ingest.jsonl"
    stdout = _run_bench("ingest", out)
    assert "|" in stdout
    assert len(out.read_text().splitlines()) == 1


@pytest.mark.slow
def test_throughput_bench_measures_every_stage_on_the_bundled_slice(tmp_path: Path) -> None:
    out = tmp_path / "throughput.jsonl"
    proc = _bench("throughput", "--size", "small", "--out", str(out), timeout=900)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    measured = row["results"]["this tree"]
    for key in ("embed_names_per_s", "question_embed_p50_ms", "ingest_s", "train_s", "train_rerun_s"):
        assert measured[key] > 0, key
    assert measured["eval_2hop_q_per_s"] > 0 and measured["retrieval_2hop_p50_ms"] > 0
    assert "| metric | this tree |" in proc.stdout


@pytest.mark.slow
def test_gpu_bench_measures_every_row_of_each_device_on_the_bundled_slice(tmp_path: Path) -> None:
    out = tmp_path / "gpu.jsonl"
    proc = _bench("gpu", "--size", "small", "--out", str(out), timeout=900)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    columns = row["results"]
    assert "cpu" in columns and ("cuda" in columns) == torch.cuda.is_available()
    for measured in columns.values():
        for key in ("embed_names_per_s", "question_embed_ms", "train_scorer_s", "train_reader_s"):
            assert measured[key] > 0, key
        assert measured["eval_q_per_s"] > 0
    if "cuda" in columns:
        assert columns["cuda"]["peak_gpu_memory_mb"] > 0
    else:
        assert "CPU column only" in proc.stderr
    assert "| metric |" in proc.stdout


@pytest.mark.slow
def test_scale_bench_loads_and_queries_the_small_generated_graph(tmp_path: Path) -> None:
    out = tmp_path / "scale.jsonl"
    proc = _bench("scale", "--size", "small", "--no-hpo", "--work-dir", str(tmp_path), "--out", str(out))
    assert "| generated small |" in proc.stdout
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    [generated] = row["results"]
    assert generated["relationships"] > 190_000 and generated["hubs"] >= 1
    assert generated["hub"]["triples"] <= 5000  # the default max_triples bounds a hub topic


@pytest.mark.slow
def test_zero_label_bench_trains_from_the_graph_and_scores_the_slice(tmp_path: Path) -> None:
    out = tmp_path / "zero_label.jsonl"
    args = ("--dataset", "metaqa-slice", "--graph-questions", "60", "--epochs", "1")
    stdout = _run_bench("zero_label", out, *args, "--data-dir", str(tmp_path / "d"))
    assert "| slice | 0 |" in stdout
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    (run,) = row["runs"]
    assert row["git_sha"] and run["generated"]["questions"] == 60 and run["slice"]["n"] > 0


def test_wordings_bench_walks_gold_answers_both_ways_and_never_answers_a_long_path_with_its_topic() -> None:
    from bench.wordings import gold_answers

    forward = {
        ("Jaws", "directed_by"): {"Steven Spielberg"},
        ("The Terminal", "directed_by"): {"Steven Spielberg"},
    }
    backward = {("Steven Spielberg", "directed_by"): {"Jaws", "The Terminal"}}
    assert gold_answers(forward, backward, "Jaws", "directed_by") == {"Steven Spielberg"}
    assert gold_answers(forward, backward, "Steven Spielberg", "directed_by-") == {"Jaws", "The Terminal"}
    # "what other movies did the director of Jaws make": not Jaws itself
    assert gold_answers(forward, backward, "Jaws", "directed_by,directed_by-") == {"The Terminal"}
    assert gold_answers(forward, backward, "Jaws", "written_by") == set()


def test_every_wordings_question_names_its_topic_and_a_path_of_known_relations() -> None:
    from bench.wordings import QUESTIONS

    relations = {
        "directed_by",
        "written_by",
        "starred_actors",
        "release_year",
        "in_language",
        "has_genre",
        "has_tags",
        "has_imdb_rating",
        "has_imdb_votes",
    }
    rows = [line.split("\t") for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    assert rows and all(len(row) == 3 for row in rows)
    for question, topic, path in rows:
        assert question and topic
        assert {step.rstrip("-") for step in path.split(",")} <= relations, question
