"""What a question's entity embeddings cost on the Bolt wire and in the driver's decoder.

Issue 29 major 6: the retriever reads the embedding of every entity of a question's subgraph
(``entities_get``, thousands per question). Over Bolt each 384-float list travels as PackStream
floats (9 bytes each) and the driver decodes it value by value, in Python unless the driver's
Rust extension (``neo4j-rust-ext``) is installed. This bench packs the rows a server would send
for ``--entities`` entities with the driver's own PackStream codec and times their decoding into
the float32 matrix the retriever keeps, in three shapes:

- ``list``: ``LIST<FLOAT>`` per entity, what ``entities_get`` returns today;
- ``vector``: a Bolt 6 ``VECTOR<FLOAT32>`` (one byte string per entity; Neo4j 2025.10+ only);
- ``score``: one FLOAT per entity, what a kernel scoring on the server
  (``vector.similarity.cosine``) returns where only a similarity is needed (MoR's text match).

No server is involved: the numbers are the wire size and the client's decode cost, which are
what the server cannot take off a question. The codec is the driver's internal one
(``neo4j._codec.packstream``), the same code a live session runs; whether the Rust extension is
in use is recorded in each row.

usage: python -m bench.bolt_decode [--size tiny|full] [--repeat N] [--device cpu] [--out FILE]
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import click

from bench.common import append_jsonl, environment, markdown_table, out_option, peak_rss_mb

SIZES = {"tiny": (100,), "full": (1000, 3000, 10000)}
SHAPES = ("list", "vector", "score")
DIMENSION = 384


def _rows(shape: str, vectors: Any) -> list[list[Any]]:
    """The rows of ``entities_get`` (id, name, text, embedding) as the server packs them."""
    from neo4j._codec.packstream import Structure

    rows = []
    for i, vector in enumerate(vectors):
        if shape == "list":
            value: Any = vector.astype(float).tolist()
        elif shape == "vector":
            value = Structure(b"V", b"\xc6", vector.astype(">f4").tobytes())  # Bolt 6 VECTOR FLOAT32
        else:
            value = 0.5
        rows.append([f"e{i}", f"entity {i}", None, value])
    return rows


def _pack(rows: list[list[Any]]) -> bytes:
    from neo4j._codec.packstream.v1 import PackableBuffer, Packer

    buffer = PackableBuffer()
    Packer(buffer).pack(rows)
    return bytes(buffer.data)


def _decode(shape: str, data: bytes) -> Any:
    """Unpack the rows and build what the retriever keeps (a float32 matrix, or the scores)."""
    import numpy as np
    from neo4j._codec.packstream.v1 import UnpackableBuffer, Unpacker

    rows = Unpacker(UnpackableBuffer(data)).unpack()
    if shape == "list":
        return np.asarray([r[3] for r in rows], dtype=np.float32)
    if shape == "vector":
        return np.frombuffer(b"".join(r[3].fields[1] for r in rows), dtype=">f4").astype(np.float32)
    return np.asarray([r[3] for r in rows], dtype=np.float32)


def _rust_codec() -> bool:
    from neo4j._codec.packstream import v1

    return getattr(v1, "_rust_unpack", None) is not None


@click.command()
@click.option("--size", type=click.Choice(sorted(SIZES)), default="full", show_default=True)
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--device", default="cpu", show_default=True, help="Recorded only: decoding runs on the CPU.")
@out_option("bolt_decode")
def main(size: str, repeat: int, device: str, out: Path) -> None:
    """Wire bytes and decode time of a question's entity embeddings over Bolt, per shape."""
    import numpy as np

    rust = _rust_codec()
    results = []
    for entities in SIZES[size]:
        vectors = np.random.default_rng(0).standard_normal((entities, DIMENSION)).astype(np.float32)
        for shape in SHAPES:
            data = _pack(_rows(shape, vectors))
            _decode(shape, data)  # warm-up
            ms = []
            for _ in range(repeat):
                started = time.perf_counter_ns()
                _decode(shape, data)
                ms.append((time.perf_counter_ns() - started) / 1e6)
            results.append(
                {"entities": entities, "shape": shape, "bytes": len(data), "median_ms": statistics.median(ms)}
            )
    rows = [
        [r["entities"], r["shape"], f"{r['bytes'] / 2**20:.2f}", f"{r['median_ms']:.1f}"] for r in results
    ]
    codec = "Rust (neo4j-rust-ext)" if rust else "pure Python"
    click.echo(f"entity rows of {DIMENSION} dims, driver codec: {codec}, median of {repeat} after warm-up")
    click.echo(markdown_table(["entities", "shape", "MiB on the wire", "decode ms"], rows))
    append_jsonl(
        out,
        {
            "bench": "bolt_decode",
            "size": size,
            "repeat": repeat,
            "rust_codec": rust,
            **environment(device),
            "results": results,
            "peak_rss_mb": peak_rss_mb(),
        },
    )


if __name__ == "__main__":
    main()
