"""Shared fixtures: a toy KG in a real kglite store, a deterministic embedder, CPU/CUDA devices."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import torch

from kgqa.store.kglite_store import KgliteStore

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# (head, relation, tail): six films/people around two directors, in MetaQA's shape.
TOY_TRIPLES = [
    ("Forrest Gump", "directed_by", "Robert Zemeckis"),
    ("Forrest Gump", "starred_actors", "Tom Hanks"),
    ("Forrest Gump", "release_year", "1994"),
    ("Cast Away", "directed_by", "Robert Zemeckis"),
    ("Cast Away", "starred_actors", "Tom Hanks"),
    ("Cast Away", "release_year", "2000"),
    ("The Terminal", "starred_actors", "Tom Hanks"),
    ("The Terminal", "directed_by", "Steven Spielberg"),
    ("Jaws", "directed_by", "Steven Spielberg"),
    ("Jaws", "has_genre", "Thriller"),
]


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, skipping the test with a clear reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} (tests read ../shared/data beside the repo)")
    return path


class FakeEmbedder:
    """Deterministic hashed bag-of-words vectors: texts sharing words get similar vectors."""

    def __init__(self, dimension: int = 16, model_id: str = "fake-hash-16") -> None:
        self.dimension = dimension
        self.model_id = model_id
        self.calls = 0

    def _word(self, word: str) -> torch.Tensor:
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        return torch.randn(self.dimension, generator=torch.Generator().manual_seed(seed))

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        self.calls += 1
        rows = []
        for text in texts:
            words = text.lower().split() or [""]
            rows.append(torch.stack([self._word(w) for w in words]).sum(0))
        if not rows:
            return torch.zeros(0, self.dimension)
        return torch.nn.functional.normalize(torch.stack(rows), dim=-1)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def kglite_store(tmp_path: Path) -> Iterator[KgliteStore]:
    """An empty embedded store in a temporary directory."""
    with KgliteStore(tmp_path / "graph.kgl") as store:
        yield store


@pytest.fixture
def toy_kg(kglite_store: KgliteStore, fake_embedder: FakeEmbedder) -> KgliteStore:
    """The toy triples loaded, embedded with the fake embedder and indexed."""
    from ingest.embedding import embed_store
    from ingest.loader import load
    from kgqa.types import TripleRecord

    records = [TripleRecord(h, r, t, line=i + 1) for i, (h, r, t) in enumerate(TOY_TRIPLES)]
    load(kglite_store, records, source="toy", fmt="test", source_key="toy")
    embed_store(kglite_store, fake_embedder)
    return kglite_store


def _devices() -> list[str]:
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


@pytest.fixture(params=_devices())
def device(request: pytest.FixtureRequest) -> torch.device:
    """CPU, plus CUDA where present (like PyG's withCUDA)."""
    return torch.device(request.param)
