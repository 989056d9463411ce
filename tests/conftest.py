"""Shared fixtures: a toy KG in a real kglite store, a deterministic embedder, CPU/CUDA devices."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import torch

from kgqa.config import ReaderSettings
from kgqa.reasoning.extractive import ExtractiveReader
from kgqa.reasoning.readers import make_llm_client
from kgqa.reasoning.readers.transformers_client import TransformersClient
from kgqa.retrieval.features import SubgraphSettings
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.retriever import Retriever
from kgqa.store.kglite_store import KgliteStore
from kgqa.types import QAExample
from retriever_training.examples import build_examples
from retriever_training.train import (
    TrainSettings,
    train_path_scorer,
    train_planner,
    train_reader,
    train_scorer,
)

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


# --------------------------------------------------------------------------- trained toy retriever

QUESTIONS = [
    ("who directed [Cast Away]", ("Cast Away",), ("Robert Zemeckis",)),
    ("who directed [Jaws]", ("Jaws",), ("Steven Spielberg",)),
    ("who directed [The Terminal]", ("The Terminal",), ("Steven Spielberg",)),
    ("who directed [Forrest Gump]", ("Forrest Gump",), ("Robert Zemeckis",)),
    ("what films did [Tom Hanks] act in", ("Tom Hanks",), ("Forrest Gump", "Cast Away", "The Terminal")),
    ("when was [Cast Away] released", ("Cast Away",), ("2000",)),
    ("when was [Forrest Gump] released", ("Forrest Gump",), ("1994",)),
]


def toy_examples() -> list[QAExample]:
    return [
        QAExample(f"toy:{i}", q.replace("[", "").replace("]", ""), t, a, line=i)
        for i, (q, t, a) in enumerate(QUESTIONS)
    ]


@pytest.fixture(scope="session")
def trained_models(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Retriever, ExtractiveReader]]:
    """Trained once per session (training dominates the cost), on its own toy store."""
    from ingest.embedding import embed_store
    from ingest.loader import load
    from kgqa.types import TripleRecord

    embedder = FakeEmbedder()
    with KgliteStore(tmp_path_factory.mktemp("toy") / "graph.kgl") as store:
        records = [TripleRecord(h, r, t, line=i + 1) for i, (h, r, t) in enumerate(TOY_TRIPLES)]
        load(store, records, source="toy", fmt="test", source_key="toy")
        embed_store(store, embedder)
        tables = (EntityTable(store, embedder.dimension), RelationTable(store))
        examples = build_examples(store, embedder, toy_examples(), tables, SubgraphSettings(hops=2))
        # recall@2: at the default @100 every toy triple is retrieved and epoch 1 would count as best.
        settings = TrainSettings(
            epochs=40, patience=40, scorer_hidden=32, reader_hidden=32, recall_k=2, seed=0
        )
        scorer, history = train_scorer(examples, examples, tables, settings, progress=False)
        assert history.val_metric[history.best_epoch - 1] == max(history.val_metric)
        path_scorer, _ = train_path_scorer(examples, examples, scorer, tables, settings, progress=False)
        planner, _ = train_planner(examples, examples, tables, settings, progress=False)
        reader, _ = train_reader(
            examples,
            examples,
            scorer,
            tables,
            settings,
            path_scorer=path_scorer,
            planner=planner,
            progress=False,
        )
        retriever = Retriever(
            store,
            embedder,
            scorer,
            path_scorer=path_scorer,
            planner=planner,
            subgraph=SubgraphSettings(hops=2),
        )
        yield retriever, ExtractiveReader(reader, retriever.tables)


@pytest.fixture(scope="session")
def trained(trained_models: tuple[Retriever, ExtractiveReader]) -> Retriever:
    """The trained toy retriever (scorers and planner)."""
    return trained_models[0]


@pytest.fixture(scope="session")
def extractive(trained_models: tuple[Retriever, ExtractiveReader]) -> ExtractiveReader:
    """The trained toy extractive reader, over :func:`trained`'s tables."""
    return trained_models[1]


# --------------------------------------------------------------------------- the bundled small LLM

GEMMA_SETTINGS = ReaderSettings(
    kind="llm", backend="transformers", device="cpu", context_tokens=2048, max_new_tokens=16
)


@pytest.fixture(scope="session")
def gemma() -> TransformersClient:
    """The bundled Gemma 3 270M in process (first run: assembles and converts the GGUF, ~1 min)."""
    client = make_llm_client(GEMMA_SETTINGS)
    assert isinstance(client, TransformersClient)
    return client
