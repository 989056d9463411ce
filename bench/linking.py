"""Linking benchmark: entity-linking accuracy on MetaQA dev questions with the brackets removed.

Each question's gold topic is its bracketed entity; the linker sees the question as a user would
type it (``what movies did Tom Hanks act in``). A question counts as correct when the first topic
equals the gold id ("top-1"), and as recalled when the gold id is among the candidates ("any").
Needs a store with the full MetaQA KB loaded and embedded (``kgqa ingest ../shared/data/metaqa/
kb.txt.gz --format metaqa``); linking only reads it.

usage: python -m bench.linking [--data-dir kgqa-data] [--limit 1000] [--repeat 1] [--device cpu] [--out FILE]
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import click

from bench.common import REPO, SHARED_DATA, append_jsonl, environment, markdown_table, peak_rss_mb

HOPS = ("1-hop", "2-hop", "3-hop")


def _run_hop(store: Any, embedder: Any, path: Path, limit: int, lowercase: bool) -> dict[str, Any]:
    from kgqa.errors import EntityNotFoundError
    from kgqa.eval.datasets import read_questions
    from kgqa.link import link
    from kgqa.store import queries

    examples = list(read_questions(path, "metaqa", limit=limit))
    golds = sorted({e.topic_ids[0] for e in examples})
    in_store = {r["id"] for r in store.run(queries.get("entities_get"), {"ids": golds})}
    top1 = anywhere = total = present = n_topics = 0
    methods: Counter[str] = Counter()
    times_ms: list[float] = []
    misses: list[str] = []
    for example in examples:
        gold = example.topic_ids[0]
        present += gold in in_store
        started = time.perf_counter_ns()
        try:
            question = example.question.lower() if lowercase else example.question
            result = link(store, embedder, question)
        except EntityNotFoundError:
            result = None
        times_ms.append((time.perf_counter_ns() - started) / 1e6)
        total += 1
        if result is None:
            methods["none"] += 1
            misses.append(f"{example.question!r}: gold {gold!r}, nothing linked")
            continue
        methods[result.method] += 1
        topics = result.topics
        n_topics += len(topics)
        top1 += bool(topics) and topics[0].id == gold
        anywhere += any(c.id == gold for c in result.candidates)
        if not topics or topics[0].id != gold:
            got = ", ".join(f"{c.id!r}({c.method})" for c in topics[:3])
            absent = "" if gold in in_store else " (gold not in the store)"
            misses.append(f"{example.question!r}: gold {gold!r}{absent}, got {got}")
    times_ms.sort()
    return {
        "questions": total,
        "gold_in_store": present / total if total else 0.0,
        "top1": top1 / total if total else 0.0,
        "anywhere": anywhere / total if total else 0.0,
        "topics_per_question": n_topics / total if total else 0.0,
        "median_ms": statistics.median(times_ms) if times_ms else 0.0,
        "p90_ms": times_ms[int(0.9 * (len(times_ms) - 1))] if times_ms else 0.0,
        "methods": dict(methods),
        "misses": misses,
    }


@click.command()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kgqa-data"),
    show_default=True,
    help="Store directory holding the full MetaQA KB (read only).",
)
@click.option("--limit", type=int, default=1000, show_default=True, help="Questions per hop file.")
@click.option("--repeat", type=int, default=1, show_default=True, help="Timing repeats (accuracy is fixed).")
@click.option("--device", default="cpu", show_default=True, help="Embedder device (vector fallback only).")
@click.option("--lowercase", is_flag=True, help="Lower-case the questions (no capitalisation cues).")
@click.option("--show-misses", type=int, default=0, help="Print up to N wrong questions per hop to stderr.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=REPO / "bench" / "results" / "linking.jsonl",
    show_default=True,
)
def main(
    data_dir: Path, limit: int, repeat: int, device: str, lowercase: bool, show_misses: int, out: Path
) -> None:
    """Measure entity-linking accuracy per hop on MetaQA dev questions without brackets."""
    from kgqa.config import load_config
    from kgqa.embed import make_embedder
    from kgqa.store import open_store

    overrides = {"store": {"data_dir": data_dir}, "embedder": {"device": device}}
    settings = load_config(overrides, environ={}).settings
    if not (data_dir / settings.store.graph_file).exists():
        raise click.ClickException(f"no store at {data_dir}; ingest the MetaQA KB there first")
    built: list[Any] = []

    def embedder() -> Any:  # built on first use: only the vector fallback needs the model
        if not built:
            built.append(make_embedder(settings.embedder))
        return built[0]

    results: dict[str, dict[str, Any]] = {}
    with open_store(settings.store) as store:
        for hop in HOPS:
            path = SHARED_DATA / "metaqa" / hop / "qa_dev.txt"
            if not path.exists():
                raise click.ClickException(f"{path} is not available (MetaQA lives in ../shared/data)")
            runs = [_run_hop(store, embedder, path, limit, lowercase) for _ in range(repeat)]
            results[hop] = {**runs[0], "median_ms": statistics.median(r["median_ms"] for r in runs)}
    rows = []
    for hop, res in results.items():
        methods = ", ".join(f"{m} {n}" for m, n in sorted(res["methods"].items(), key=lambda kv: -kv[1]))
        rows.append(
            [
                hop,
                res["questions"],
                f"{res['gold_in_store']:.1%}",
                f"{res['top1']:.1%}",
                f"{res['anywhere']:.1%}",
                f"{res['topics_per_question']:.2f}",
                methods,
                f"{res['median_ms']:.1f}",
                f"{res['p90_ms']:.1f}",
            ]
        )
        for miss in res["misses"][:show_misses]:
            click.echo(f"[{hop}] {miss}", err=True)
    cased = ", lower-cased" if lowercase else ""
    click.echo(f"MetaQA dev, brackets removed{cased}, first {limit} questions per hop; store {data_dir}")
    header = ["hop", "questions", "gold in store", "top-1 = gold", "gold in candidates", "topics/q", "method"]
    click.echo(markdown_table([*header, "median ms", "p90 ms"], rows))
    click.echo(f"\nembedder loaded: {'yes' if built else 'no'}; peak RSS {peak_rss_mb():,.0f} MB")
    summary = {h: {k: v for k, v in r.items() if k != "misses"} for h, r in results.items()}
    append_jsonl(
        out,
        {
            "bench": "linking",
            "limit": limit,
            "lowercase": lowercase,
            "repeat": repeat,
            **environment(device),
            "results": summary,
        },
    )


if __name__ == "__main__":
    main()
