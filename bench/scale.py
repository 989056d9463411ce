"""Scale benchmark (issue 15): ingest and hub-topic subgraph extraction on the embedded store.

Two graphs:

- ``generated``: a seeded power-law graph built here (never committed). Heads are uniform over
  the entities, tails Zipf(1) over them (entity ``e0`` is the most popular), 24 relation types,
  and one head hub: a share of the triples, spread through the file, all start at the
  middle-ranked entity (a graph with one subject of very many facts; kglite's relationship
  MERGE used to walk such a head's every relationship per row). ``--size full`` is 5M triples
  over 1M entities, so ``e0``..``e2`` carry 100k+ relationships each as tails and 150k rows
  start at the head hub (85k distinct relationships once loaded); ``--size small`` is 200k
  over 40k (under a minute, for the smoke test). It is loaded with ``ingest.loader.load``
  into a fresh store, without embeddings (what ``kgqa ingest --no-embed`` runs; hub slices
  included), timing the load and the peak RSS of this process.
- ``hpo``: the HPO typed graph already loaded at ``--hpo-dir`` (read-only; its ingest with
  embeddings is measured in docs/decisions.md). Skipped when absent.

For each graph, 2-hop subgraph extraction (``extract_subgraph`` with the default caps) is timed
for hub topics (the most connected entities) and for non-hub topics (a seeded sample of entities
with at most ``retrieval.max_degree`` relationships): p50/p95 over repeats.

Targets (2 cores): hub-topic extraction p95 <= 100 ms on the 5M graph; the 5M ingest <= 5 min
with peak RSS <= 8 GB.

usage: python -m bench.scale [--size small|full] [--hpo-dir DIR] [--work-dir DIR] [--out FILE]
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from bench.common import REPO, append_jsonl, environment, markdown_table, out_option, peak_rss_mb

SIZES = {"small": (200_000, 40_000), "full": (5_000_000, 1_000_000)}  # triples, entities
HEAD_HUB_TRIPLES = {"small": 12_000, "full": 150_000}  # triples out of one head, among the above
RELATION_TYPES = 24
HUB_DEGREE = {"small": 10_000, "full": 100_000}  # a generated topic with this many is a hub
HUB_TOPICS = 10
NON_HUB_TOPICS = 50
HUB_REPEATS = 5
TARGET_HUB_P95_MS = 100.0
TARGET_INGEST_S = 300.0
TARGET_RSS_MB = 8 * 1024
DEFAULT_HPO = REPO.parent / "data" / "hpo"


def power_law_graph(triples: int, entities: int, seed: int, head_hub: int = 0) -> tuple[Any, Any, Any]:
    """(heads, relation indexes, tails) as int arrays: heads uniform, tails Zipf(1) by entity
    index; ``head_hub`` triples at random places all start at entity ``entities // 2``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, entities + 1)
    heads = rng.integers(0, entities, size=triples)
    tails = rng.choice(entities, size=triples, p=weights / weights.sum())
    relations = rng.integers(0, RELATION_TYPES, size=triples)
    heads[rng.choice(triples, size=head_hub, replace=False)] = entities // 2
    return heads, relations, tails


def _records(heads: Any, relations: Any, tails: Any) -> Iterator[Any]:
    from kgqa.types import TripleRecord

    for line, (h, r, t) in enumerate(zip(heads.tolist(), relations.tolist(), tails.tolist(), strict=True), 1):
        yield TripleRecord(f"e{h}", f"rel_{r:02d}", f"e{t}", line)


def _distinct_out(heads: Any, relations: Any, tails: Any, entity: int) -> int:
    """Relationships out of ``entity`` once loaded: its distinct (type, tail) pairs."""
    mine = heads == entity
    return len(set(zip(relations[mine].tolist(), tails[mine].tolist(), strict=True)))


def _percentiles(samples_ms: list[float]) -> tuple[float, float]:
    from kgqa.eval.metrics import latency_summary

    summary = latency_summary(samples_ms)
    return summary["p50"], summary["p95"]


def time_extraction(store: Any, topics: list[str], repeats: int) -> dict[str, float]:
    """p50/p95 ms (wall clock and CPU time of this process) and mean triples of a 2-hop
    ``extract_subgraph`` per topic, default caps. CPU time is what the work costs when other
    processes share the cores; wall clock is what a user waits."""
    from kgqa.retrieval.graph.subgraph import extract_subgraph

    extract_subgraph(store, topics[:1], hops=2)  # warm caches and the kernel text
    wall: list[float] = []
    cpu: list[float] = []
    sizes: list[int] = []
    for _ in range(repeats):
        for topic in topics:
            started, cpu_started = time.perf_counter(), time.process_time()
            sub = extract_subgraph(store, [topic], hops=2)
            wall.append((time.perf_counter() - started) * 1e3)
            cpu.append((time.process_time() - cpu_started) * 1e3)
            sizes.append(sub.num_triples)
    p50, p95 = _percentiles(wall)
    cpu_p50, cpu_p95 = _percentiles(cpu)
    return {
        "p50_ms": p50,
        "p95_ms": p95,
        "cpu_p50_ms": cpu_p50,
        "cpu_p95_ms": cpu_p95,
        "triples": statistics.mean(sizes),
        "n": len(wall),
    }


def generated_run(size: str, seed: int, work_dir: Path | None) -> dict[str, Any]:
    """Build, load and query the generated graph in a temporary store."""
    import numpy as np

    from ingest.loader import load
    from kgqa.config import RETRIEVAL_DEFAULTS
    from kgqa.store.kglite_store import KgliteStore

    n_triples, n_entities = SIZES[size]
    heads, relations, tails = power_law_graph(n_triples, n_entities, seed, HEAD_HUB_TRIPLES[size])
    degree = np.bincount(heads, minlength=n_entities) + np.bincount(tails, minlength=n_entities)
    hubs = [f"e{i}" for i in np.argsort(-degree)[:HUB_TOPICS] if degree[i] >= HUB_DEGREE[size]]
    light = np.flatnonzero((degree > 0) & (degree <= RETRIEVAL_DEFAULTS.max_degree))
    picked = random.Random(seed).sample(light.tolist(), NON_HUB_TOPICS)
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        with KgliteStore(Path(tmp) / "graph.kgl") as store:
            started, cpu_started = time.perf_counter(), time.process_time()
            records = _records(heads, relations, tails)
            report = load(store, records, source="generated", fmt="bench", source_key="gen")
            load_s = time.perf_counter() - started
            load_cpu_s = time.process_time() - cpu_started
        rss_mb = peak_rss_mb()
        with KgliteStore(Path(tmp) / "graph.kgl") as store:  # reopened read-only, as `kgqa ask` does
            hub = time_extraction(store, hubs, HUB_REPEATS)
            non_hub = time_extraction(store, [f"e{i}" for i in picked], 1)
    return {
        "graph": f"generated {size}",
        "triples": report.triple_records,
        "relationships": report.writes.relationships_created,
        "entities": report.writes.nodes_created,
        "max_degree": int(degree.max()),
        "head_hub_out_degree": _distinct_out(heads, relations, tails, n_entities // 2),
        "slices_built": report.slices_built,
        "hubs": len(hubs),
        "hub_min_degree": int(min(degree[int(h[1:])] for h in hubs)),
        "load_s": load_s,
        "load_cpu_s": load_cpu_s,
        "peak_rss_mb": rss_mb,
        "hub": hub,
        "non_hub": non_hub,
    }


def hpo_run(hpo_dir: Path, seed: int) -> dict[str, Any] | None:
    """Extraction on the already loaded HPO store (read-only)."""
    from kgqa.config import RETRIEVAL_DEFAULTS
    from kgqa.store.kglite_store import KgliteStore

    path = hpo_dir / "graph.kgl"
    if not path.exists():
        return None
    with KgliteStore(path) as store:
        rows = store.graph.cypher(
            "MATCH (e:Entity) RETURN e.id AS id, COUNT { (e)--() } AS degree ORDER BY degree DESC, id"
        ).to_list()  # type: ignore[union-attr]
        hubs = [r["id"] for r in rows[:HUB_TOPICS]]
        light = [r["id"] for r in rows if 0 < r["degree"] <= RETRIEVAL_DEFAULTS.max_degree]
        hub = time_extraction(store, hubs, HUB_REPEATS)
        non_hub = time_extraction(store, random.Random(seed).sample(light, NON_HUB_TOPICS), 1)
    return {
        "graph": "hpo",
        "entities": len(rows),
        "relationships": sum(r["degree"] for r in rows) // 2,
        "max_degree": rows[0]["degree"],
        "hub_min_degree": rows[HUB_TOPICS - 1]["degree"],
        "hubs": len(hubs),
        "hub": hub,
        "non_hub": non_hub,
    }


def _latency(timing: dict[str, float]) -> str:
    return (
        f"{timing['p50_ms']:.0f} / {timing['p95_ms']:.0f} "
        f"(CPU {timing['cpu_p50_ms']:.0f} / {timing['cpu_p95_ms']:.0f})"
    )


def _rows(results: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for r in results:
        load, degree = "(loaded before)", f"{r['max_degree']:,}"
        if "load_s" in r:
            load = (
                f"{r['load_s']:.0f} s (CPU {r['load_cpu_s']:.0f} s) / {r['peak_rss_mb'] / 1024:.2f} GB, "
                f"{r['slices_built']:,} slices"
            )
            degree += f" (a head of {r['head_hub_out_degree']:,})"
        rows.append(
            [
                r["graph"],
                f"{r['relationships']:,}",
                degree,
                load,
                f"{r['hubs']} (>= {r['hub_min_degree']:,})",
                _latency(r["hub"]),
                f"{r['hub']['triples']:,.0f}",
                _latency(r["non_hub"]),
                f"{r['non_hub']['triples']:,.0f}",
            ]
        )
    return rows


@click.command()
@click.option("--size", type=click.Choice(sorted(SIZES)), default="full", show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--hpo-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_HPO,
    show_default=True,
    help="A loaded HPO store (graph.kgl); skipped when absent.",
)
@click.option("--no-hpo", is_flag=True, help="Only the generated graph.")
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the temporary generated store goes (default: the system temp dir).",
)
@out_option("scale")
def main(size: str, seed: int, hpo_dir: Path, no_hpo: bool, work_dir: Path | None, out: Path) -> None:
    """Time loading a generated power-law graph and extracting hub-topic subgraphs (embedded store)."""
    results = [generated_run(size, seed, work_dir)]
    hpo = None if no_hpo else hpo_run(hpo_dir, seed)
    if hpo is not None:
        results.append(hpo)
    elif not no_hpo:
        click.echo(f"(no HPO store at {hpo_dir}: skipped)", err=True)
    header = [
        "graph",
        "relationships",
        "max degree (out)",
        "ingest / peak RSS, hub slices",
        "hub topics",
        "hub p50 / p95 ms (CPU)",
        "hub triples",
        "non-hub p50 / p95 ms (CPU)",
        "non-hub triples",
    ]
    click.echo(markdown_table(header, _rows(results)))
    generated = results[0]
    if size == "full":
        hub_p95 = generated["hub"]["p95_ms"]
        click.echo(
            f"targets: hub p95 <= {TARGET_HUB_P95_MS:.0f} ms: {hub_p95 <= TARGET_HUB_P95_MS}; "
            f"ingest <= {TARGET_INGEST_S:.0f} s: {generated['load_s'] <= TARGET_INGEST_S}; "
            f"peak RSS <= 8 GB: {generated['peak_rss_mb'] <= TARGET_RSS_MB}"
        )
    append_jsonl(out, {**environment("cpu"), "size": size, "seed": seed, "results": results})


if __name__ == "__main__":
    main()
