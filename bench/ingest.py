"""Ingest benchmark: load + embed + index MetaQA on the embedded store, with peak memory.

Targets (issue 2, 2-core machine): the whole KB with embeddings and indexes in under 90 s, peak
RSS under 3 GB. ``--size full`` reads ../shared/data/metaqa/kb.txt.gz; ``--size tiny`` the
bundled quick-start slice. Each repeat loads into a fresh store, then re-runs the ingest to show
it writes nothing.

usage: python -m bench.ingest [--size tiny|full] [--repeat N] [--device cpu] [--out FILE]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import click

from bench.common import REPO, SHARED_DATA, append_jsonl, environment, markdown_table, out_option, peak_rss_mb

SOURCES = {
    "tiny": REPO / "examples" / "metaqa_movies" / "kb.txt",
    "full": SHARED_DATA / "metaqa" / "kb.txt.gz",
}
TARGET_SECONDS = 90.0
TARGET_RSS_MB = 3 * 1024


def _one_run(source: Path, device: str) -> dict[str, float]:
    from ingest.pipeline import ingest_source
    from kgqa.config import load_config

    with tempfile.TemporaryDirectory() as tmp:
        overrides = {"store": {"data_dir": tmp}, "embedder": {"device": device}}
        settings = load_config(overrides, environ={}).settings
        started = time.perf_counter()
        result = ingest_source(settings, source, "metaqa", options={}, force=False, progress=False)
        total = time.perf_counter() - started
        again = ingest_source(settings, source, "metaqa", options={}, force=True, progress=False)
    assert result.embedding is not None
    return {
        "triples": result.load.triple_records,
        "load_s": result.load.seconds,
        "triples_per_s": result.load.triples_per_second,
        "entities": result.embedding.entities_embedded,
        "embed_s": result.embedding.embed_seconds,
        "entities_per_s": result.embedding.entities_per_second,
        "index_s": result.embedding.index_seconds,
        "total_s": total,
        "rerun_new_writes": again.load.writes.total
        + (again.embedding.entities_embedded if again.embedding else 0),
        "rerun_s": again.load.seconds,
    }


@click.command()
@click.option("--size", type=click.Choice(sorted(SOURCES)), default="full", show_default=True)
@click.option("--repeat", type=int, default=1, show_default=True)
@click.option("--device", default="cpu", show_default=True)
@out_option("ingest")
def main(size: str, repeat: int, device: str, out: Path) -> None:
    """Time loading, embedding and indexing MetaQA on the embedded store."""
    source = SOURCES[size]
    if not source.exists():
        raise click.ClickException(f"{source} is not available (the full KB lives in ../shared/data)")
    runs = [_one_run(source, device) for _ in range(repeat)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    rss = peak_rss_mb()
    rows = [
        [
            "load (UNWIND MERGE batches)",
            f"{med['load_s']:.1f}",
            f"{med['triples_per_s']:,.0f} triples/s",
            f"{med['load_s'] / med['total_s']:.0%}",
        ],
        [
            "embed (all-MiniLM-L6-v2)",
            f"{med['embed_s']:.1f}",
            f"{med['entities_per_s']:,.0f} entities/s",
            f"{med['embed_s'] / med['total_s']:.0%}",
        ],
        ["indexes", f"{med['index_s']:.2f}", "", f"{med['index_s'] / med['total_s']:.1%}"],
        [
            "total (incl. model load, save)",
            f"{med['total_s']:.1f}",
            f"target < {TARGET_SECONDS:.0f} s",
            "100%",
        ],
        [
            "re-run (--force re-merge)",
            f"{med['rerun_s']:.1f}",
            f"{med['rerun_new_writes']:.0f} new writes",
            "",
        ],
    ]
    click.echo(
        f"MetaQA ({size}): {med['triples']:,.0f} triples, {med['entities']:,.0f} entities, "
        f"median of {repeat} run(s), device {device}"
    )
    click.echo(markdown_table(["stage", "seconds", "rate", "share of total"], rows))
    verdict = "PASS" if med["total_s"] < TARGET_SECONDS and rss < TARGET_RSS_MB else "MISS"
    if size != "full":
        verdict = "n/a (the targets are for --size full)"
    click.echo(f"\npeak RSS {rss:,.0f} MB (target < {TARGET_RSS_MB:,} MB); whole-KB target: {verdict}")
    append_jsonl(
        out,
        {"bench": "ingest", "size": size, "repeat": repeat, **environment(device), **med, "peak_rss_mb": rss},
    )


if __name__ == "__main__":
    main()
