"""The public Python API (``import kgqa``) on the bundled MetaQA slice: ingest, open, ask, retrieve,
train, as a notebook calls them (real triples, the real embedding model)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import kgqa
from kgqa.errors import ConfigError, KgqaError
from kgqa.retrieval.models.plans import name_prior_for

SLICE = Path(__file__).resolve().parents[2] / "examples" / "metaqa_movies"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The bundled slice ingested with :func:`kgqa.ingest`; nothing trained."""
    data = str(tmp_path_factory.mktemp("api") / "store")
    report = kgqa.ingest(SLICE / "kb.txt", format="metaqa", data_dir=data)
    assert report.to_dict()["load"]["triple_records"] > 2000
    return data


@pytest.fixture(scope="module")
def graph(data_dir: str) -> Iterator[kgqa.Graph]:
    with kgqa.open(data_dir=data_dir) as g:
        yield g


def test_import_kgqa_loads_no_heavy_module() -> None:
    code = (
        "import sys, kgqa\nassert kgqa.__version__ and 'open' in kgqa.__all__\n"
        "print([m for m in ('torch', 'transformers', 'kglite', 'neo4j', 'kgqa.api') if m in sys.modules])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_every_public_name_resolves() -> None:
    assert all(getattr(kgqa, name) is not None for name in kgqa.__all__)
    assert set(kgqa.__all__) <= set(dir(kgqa))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        kgqa.nothing  # noqa: B018


def test_ask_on_a_freshly_ingested_slice_answers_train_free(graph: kgqa.Graph) -> None:
    answer = graph.ask("who directed cast away")
    assert isinstance(answer, kgqa.Answer)
    assert answer.answers[0].name == "Robert Zemeckis" and answer.answers[0].grounded
    assert answer.reader == "train-free" and graph.model.startswith("none: train-free")
    assert answer.topics[0].id == "Cast Away" and answer.evidence


def test_ask_with_a_topic_id_skips_linking(graph: kgqa.Graph) -> None:
    answer = graph.ask("who directed this film", topic="Cast Away")
    assert [t.id for t in answer.topics] == ["Cast Away"]
    assert answer.answers[0].name == "Robert Zemeckis"


def test_retrieve_returns_scored_triples_best_first_and_prompt_ready_evidence(graph: kgqa.Graph) -> None:
    retrieved = graph.retrieve("who directed cast away", top_k=5)
    assert isinstance(retrieved, kgqa.Retrieved) and len(retrieved.triples) == 5
    scores = [t.score for t in retrieved.triples]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert retrieved.triples[0].key == ("Cast Away", "DIRECTED_BY", "Robert Zemeckis")
    assert retrieved.context().splitlines() == [line.text for line in retrieved.evidence]
    assert "Robert Zemeckis" in retrieved.context()
    assert json.loads(json.dumps(retrieved.to_dict()))["triples"][0]["tail_id"] == "Robert Zemeckis"


def test_settings_by_section_reach_any_key(data_dir: str) -> None:
    with kgqa.open(data_dir=data_dir, retrieval={"top_k": 3}) as g:
        assert g.settings.retrieval.top_k == 3
        assert len(g.retrieve("who directed cast away").triples) == 3


@pytest.mark.parametrize(
    ("sections", "message"),
    [({"retrieval": {"hop": 2}}, r"retrieval\.hop \(argument\)"), ({"retrieval": 2}, "not a section")],
)
def test_open_refuses_a_bad_setting_by_name(data_dir: str, sections: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        kgqa.open(data_dir=data_dir, **sections)  # type: ignore[arg-type]


def test_open_without_a_store_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(KgqaError) as caught:
        kgqa.open(data_dir=tmp_path / "none")
    assert caught.value.hint is not None and "kgqa ingest" in caught.value.hint


def test_a_closed_graph_refuses_questions(data_dir: str) -> None:
    g = kgqa.open(data_dir=data_dir)
    g.close()
    g.close()
    with pytest.raises(ConfigError, match="closed"):
        g.ask("who directed cast away")


def test_ingest_again_writes_nothing(data_dir: str) -> None:
    report = kgqa.ingest(str(SLICE / "kb.txt"), format="metaqa", data_dir=data_dir).to_dict()
    assert report["load"]["already_complete"] and report["load"]["new_writes"] == 0


def test_train_needs_something_to_train_on(data_dir: str) -> None:
    with pytest.raises(ConfigError, match="nothing to train on"):
        kgqa.train(data_dir=data_dir)
    with pytest.raises(ConfigError, match="format"):
        kgqa.train(SLICE / "questions.txt", data_dir=data_dir)


@pytest.mark.slow
def test_train_writes_the_checkpoint_open_then_answers_with(data_dir: str, tmp_path: Path) -> None:
    out = tmp_path / "small.pt"
    report = kgqa.train(SLICE / "questions.txt", format="metaqa", data_dir=data_dir, out=out, epochs=2)
    assert Path(report.out) == out and out.is_file() and report.questions["train"] > 0
    with kgqa.open(data_dir=data_dir, checkpoint=out) as g:
        assert "labelled questions" in g.model
        labelled = report.examples["labelled_train"]
        assert f"relation-name prior {name_prior_for(labelled):.2f}" in g.model
        assert g._open_asker().retriever.name_prior == name_prior_for(labelled)  # type: ignore[union-attr]
        answer = g.ask("who directed cast away")
    with kgqa.open(data_dir=data_dir, checkpoint=out, retrieval={"name_prior": 0.7}) as g:
        assert "relation-name prior 0.70" in g.model
    assert answer.reader == "extractive" and answer.answers[0].name == "Robert Zemeckis"
