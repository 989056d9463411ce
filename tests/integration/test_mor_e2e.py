"""MoR on a tiny text-rich typed graph (tests/fixtures/hpo_mini_*): kernels, traversal, and a
trained planner + reranker end to end, on the embedded store with the fake embedder.

The graph is built so that each question needs both channels: the named phenotype is shared by
two diseases (genes), and only the described one tells them apart, while disease and gene
texts never mention phenotypes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from ingest.embedding import embed_store
from ingest.loader import load
from ingest.readers.typed_csv import read_typed_csv
from kgqa.eval.datasets import read_questions
from kgqa.retrieval.mor.plan import Metapath, parse_metapath
from kgqa.retrieval.mor.retriever import MorModel, MorRetriever
from kgqa.retrieval.mor.traversal import Anchors, TraversalSettings, Traverser, read_schema
from kgqa.store.kglite_store import KgliteStore
from retriever_training.mor import MorTrainReport, MorTrainSettings, train_mor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

PHENOTYPES = {  # id -> (name, description as the questions quote it)
    "HP:1": ("small earlobe", "reduced volume of the earlobe"),
    "HP:2": ("large earlobe", "increased volume of the earlobe"),
    "HP:3": ("seizure", "an intermittent abnormality of nervous system physiology"),
    "HP:4": ("pain", "an unpleasant sensory and emotional experience"),
    "HP:5": ("short finger", "reduced length of a digit of the hand"),
    "HP:6": ("long finger", "increased length of a digit of the hand"),
}
TEMPLATES = {  # answer type -> (question, metapath)
    "disease": (
        'Which diseases present with {name} and also with the feature defined as "{text}"?',
        "disease* -disease_phenotype_positive-> phenotype[text] AND "
        "disease* -disease_phenotype_positive-> phenotype[name]",
    ),
    "gene": (
        'Which genes are associated with {name} and also with the feature defined as "{text}"?',
        "gene* -phenotype_protein-> phenotype[text] AND gene* -phenotype_protein-> phenotype[name]",
    ),
}
EDGE_TYPE = {"disease": "disease_phenotype_positive", "gene": "phenotype_protein"}


def _neighbours(answer_type: str) -> dict[str, set[str]]:
    """phenotype -> the diseases (genes) annotated with it, from the fixture's edges."""
    out: dict[str, set[str]] = {}
    with (FIXTURES / "hpo_mini_edges.csv").open() as fh:
        for row in csv.DictReader(fh):
            if row["type"] == EDGE_TYPE[answer_type]:
                out.setdefault(row["dst"], set()).add(row["src"])
    return out


def _write_questions(path: Path) -> None:
    rows = []
    for answer_type, (template, metapath) in TEMPLATES.items():
        by_phenotype = _neighbours(answer_type)
        for named in ("HP:3", "HP:4"):
            for described in ("HP:1", "HP:2", "HP:5", "HP:6"):
                answers = sorted(by_phenotype[named] & by_phenotype[described])
                name, text = PHENOTYPES[named][0], PHENOTYPES[described][1]
                q = template.format(name=name, text=text)
                rows.append([str(len(rows)), q, json.dumps(answers), answer_type, metapath, text])
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "query", "answer_ids", "template", "metapath", "text_constraint"])
        writer.writerows(rows)


@pytest.fixture
def mini_kg(kglite_store: KgliteStore, fake_embedder: Any) -> KgliteStore:
    items = read_typed_csv(FIXTURES / "hpo_mini_nodes.csv", edges=FIXTURES / "hpo_mini_edges.csv")
    load(kglite_store, items, source="hpo_mini", fmt="typed-csv", source_key="hpo_mini")
    embed_store(kglite_store, fake_embedder)
    return kglite_store


def test_schema_is_read_from_the_store(mini_kg: KgliteStore) -> None:
    assert read_schema(mini_kg).triples == {
        ("Disease", "DISEASE_PHENOTYPE_POSITIVE", "Phenotype"),
        ("Disease", "DISEASE_PROTEIN", "Gene"),
        ("Gene", "PHENOTYPE_PROTEIN", "Phenotype"),
        ("Phenotype", "PHENOTYPE_PHENOTYPE", "Phenotype"),
    }


def test_typed_traversal_walks_stored_directions_and_one_or_two_hops(
    mini_kg: KgliteStore, fake_embedder: Any
) -> None:
    traverser = Traverser(mini_kg, fake_embedder, TraversalSettings())
    # descendants (1 or 2 is_a levels below) of "Abnormal ear"
    plan = parse_metapath("Phenotype* -PHENOTYPE_PHENOTYPE{1,2}-> Phenotype[name]")
    anchors = Anchors(spans={}, names={(0, 1): [("HP:8", 1.0)]}, question="")
    reached = traverser.run_chain(0, plan.chains[0], anchors)
    assert sorted(reached) == ["HP:1", "HP:2", "HP:7"]
    trajectory = reached["HP:1"][0]
    assert trajectory.nodes == ("HP:8", "HP:7", "HP:1")
    assert (
        trajectory.rel_types == ("PHENOTYPE_PHENOTYPE", "PHENOTYPE_PHENOTYPE") and len(trajectory.rels) == 2
    )
    # the other direction: the parent of "Small earlobe" only, never its siblings
    up = parse_metapath("Phenotype* <-PHENOTYPE_PHENOTYPE- Phenotype[name]")
    assert sorted(traverser.run_chain(0, up.chains[0], Anchors({}, {(0, 1): [("HP:1", 1.0)]}, ""))) == [
        "HP:7"
    ]


def test_typed_traversal_caps_hubs_per_source(mini_kg: KgliteStore, fake_embedder: Any) -> None:
    traverser = Traverser(mini_kg, fake_embedder, TraversalSettings(per_source=1))
    plan = parse_metapath("Disease* -DISEASE_PHENOTYPE_POSITIVE-> Phenotype[name]")
    reached = traverser.run_chain(0, plan.chains[0], Anchors({}, {(0, 1): [("HP:3", 1.0)]}, ""))
    assert len(reached) == 1 and set(reached) < {"D:1", "D:2"}  # both have it; the cap keeps one


def test_text_anchor_matching_prefers_the_described_node(mini_kg: KgliteStore, fake_embedder: Any) -> None:
    traverser = Traverser(mini_kg, fake_embedder, TraversalSettings())
    rows = traverser.text_matches("increased volume of the earlobe", "Phenotype", 3)
    assert rows[0]["id"] == "HP:2"


@pytest.fixture
def trained(mini_kg: KgliteStore, fake_embedder: Any, tmp_path: Path) -> MorRetriever:
    path = tmp_path / "qa.csv"
    _write_questions(path)
    examples = list(read_questions(path, "stark"))
    report = MorTrainReport(out="")
    model = train_mor(
        mini_kg,
        fake_embedder,
        examples,
        examples,
        report,
        train_settings=MorTrainSettings(reranker_epochs=30),
        progress=False,
    )
    assert report.planner_val_accuracy == 1.0
    return MorRetriever(mini_kg, fake_embedder, MorModel.load(model.checkpoint()))


QUESTION = (
    "Which diseases present with seizure and also with the feature defined as "
    '"increased volume of the earlobe"?'
)


def test_mor_answers_a_question_that_needs_both_text_and_structure(trained: MorRetriever) -> None:
    result = trained.retrieve(QUESTION)
    assert str(result.plan).startswith("Disease*")
    assert result.nodes[0].id == "D:2"  # seizure: D:1, D:2; increased volume of the earlobe: D:2, D:4
    best = result.nodes[0].trajectories[0]
    assert best.nodes[-1] == "D:2" and best.rels
    genes = trained.retrieve(QUESTION.replace("diseases present", "genes are associated"))
    assert genes.nodes[0].id == "G:2"


def test_mor_fails_without_either_channel(trained: MorRetriever) -> None:
    text_only = trained.retrieve(QUESTION, structural=False)
    assert not text_only.nodes or text_only.nodes[0].id != "D:2"
    # the plan without its text restriction: the named phenotype alone cannot tell D:1 from D:2
    full = trained.retrieve(QUESTION)
    name_chain = next(c for c in full.plan.chains if c.nodes[-1].restriction == "name")
    found = trained.traverser.run(Metapath((name_chain,)), full.anchors)
    ranked = trained.rank(found, full.plan, full.plan_prob, rerank=False)
    assert ranked[0][0].id != "D:2"


def test_mor_eval_scores_stark_and_kgqa_metrics_per_kind(trained: MorRetriever, tmp_path: Path) -> None:
    from kgqa.eval.mor import evaluate_mor
    from kgqa.retrieval.mor.plan import store_metapath

    path = tmp_path / "qa.csv"
    _write_questions(path)
    examples = list(read_questions(path, "stark"))
    log = tmp_path / "eval.jsonl"
    summary = evaluate_mor(
        trained, examples, log_path=log, gold_plan=lambda e: store_metapath(e.metapath).key
    )
    assert summary.n == len(examples) == len(log.read_text().splitlines())
    assert set(summary.per_kind) == {"disease", "gene"} and summary.plan_accuracy == 1.0
    assert summary.stark["hit_at_1"] >= 0.9 and summary.kgqa["hit_at_1"] == summary.stark["hit_at_1"]
    assert "| all |" in summary.render()


def test_saved_mor_answer_keeps_its_trajectories_as_evidence(trained: MorRetriever) -> None:
    from kgqa.saved_questions import load_saved, save_mor_result

    result = trained.retrieve(QUESTION, top_k=1)
    qid = save_mor_result(trained.store, QUESTION, result)
    saved = load_saved(trained.store, qid)
    assert saved.answers == ("D:2",)
    # keys in the graph's direction, whichever way the walk crossed the relationship
    assert set(saved.evidence) >= {("D:2", "DISEASE_PHENOTYPE_POSITIVE", "HP:2")}
    walked = {k for node in result.nodes for t in node.trajectories for k in t.rel_keys}
    assert set(saved.evidence) == walked


def test_cli_ingests_trains_asks_and_evaluates_the_mor_path(tmp_path: Path) -> None:
    """The commands a user runs on a text-rich graph, through the CLI and its store opening."""
    from click.testing import CliRunner

    from kgqa.cli import cli

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    data, questions = str(tmp_path / "d"), tmp_path / "qa.csv"
    _write_questions(questions)
    nodes, edges = str(FIXTURES / "hpo_mini_nodes.csv"), str(FIXTURES / "hpo_mini_edges.csv")
    run("ingest", nodes, "--edges", edges, "--format", "typed-csv", "--data-dir", data, "--json")
    run(
        "train",
        str(questions),
        "--format",
        "stark",
        "--data-dir",
        data,
        "--val-file",
        str(questions),
        "--json",
    )
    asked = json.loads(run("ask", QUESTION, "--data-dir", data, "--json"))
    assert asked["answers"] and all(a["id"].startswith("D:") for a in asked["answers"])
    log = str(tmp_path / "eval.jsonl")
    summary = json.loads(
        run("eval", str(questions), "--format", "stark", "--data-dir", data, "--log", log, "--json")
    )
    assert 0.0 <= summary["stark"]["mrr"] <= 1.0
