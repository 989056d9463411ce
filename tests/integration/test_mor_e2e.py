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
import torch

from ingest.embedding import embed_store
from ingest.loader import load
from ingest.readers.typed_csv import read_typed_csv
from kgqa.eval.datasets import read_questions
from kgqa.retrieval.mor.plan import Metapath, parse_metapath
from kgqa.retrieval.mor.retriever import (
    MorModel,
    MorRetriever,
    PlanRun,
    QuestionReading,
    TrainedPlanner,
)
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
    rows: list[list[str]] = []
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


def train_on_questions(store: KgliteStore, fake_embedder: Any, tmp_path: Path) -> MorRetriever:
    """MoR trained on the questions of :func:`_write_questions` over ``store`` (the HPO excerpt,
    as loaded or through a user's mapping), its planner checked perfect on them."""
    path = tmp_path / "qa.csv"
    _write_questions(path)
    examples = list(read_questions(path, "stark"))
    report = MorTrainReport(out="")
    model = train_mor(
        store,
        fake_embedder,
        examples,
        examples,
        report,
        train_settings=MorTrainSettings(reranker_epochs=30),
        progress=False,
    )
    assert report.planner_val_accuracy == 1.0
    return MorRetriever(store, fake_embedder, MorModel.load(model.checkpoint()))


@pytest.fixture
def trained(mini_kg: KgliteStore, fake_embedder: Any, tmp_path: Path) -> MorRetriever:
    return train_on_questions(mini_kg, fake_embedder, tmp_path)


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
    name_plan = Metapath((name_chain,))
    found = trained.traverser.run(name_plan, full.anchors)
    ranked = trained.rank([PlanRun(name_plan, full.plan_prob, 1.0, full.anchors, found)], rerank=False)
    assert ranked[0][0].id != "D:2"


class _ScriptedPlanner:
    """Returns fixed plans, whatever the question (to drive MorRetriever's merging of plans)."""

    def __init__(self, plans: list[tuple[str, float]]) -> None:
        self.planned = [(parse_metapath(p), prob) for p, prob in plans]

    def plans(self, question: str, reading: QuestionReading) -> list[tuple[Metapath, float]]:
        return list(self.planned)


FULL = (
    "Disease* -DISEASE_PHENOTYPE_POSITIVE-> Phenotype[text] AND "
    "Disease* -DISEASE_PHENOTYPE_POSITIVE-> Phenotype[name]"
)
NAME_ONLY = "Disease* -DISEASE_PHENOTYPE_POSITIVE-> Phenotype[name]"
GENE_NAMED = (
    "Disease* -DISEASE_PHENOTYPE_POSITIVE-> Phenotype[text] AND Disease* -DISEASE_PROTEIN-> Gene[name]"
)


def test_trained_planner_returns_runners_up_of_the_answer_type_within_the_margin(
    trained: MorRetriever,
) -> None:
    reading = trained.read(QUESTION)
    every = TrainedPlanner(trained.model, ratio=0.0, max_plans=4).plans(QUESTION, reading)
    probs = [p for _, p in every]
    assert 1 <= len(every) <= 4 and probs == sorted(probs, reverse=True)
    assert {plan.answer.type for plan, _ in every} == {"Disease"}
    best_only = TrainedPlanner(trained.model, ratio=1.0).plans(QUESTION, reading)
    assert best_only == every[:1]
    margin = TrainedPlanner(trained.model, ratio=0.5, max_plans=4).plans(QUESTION, reading)
    assert margin == [(plan, p) for plan, p in every if p >= 0.5 * probs[0]]


def test_a_question_describes_a_node_through_a_cue_or_words_beyond_its_names(trained: MorRetriever) -> None:
    assert trained.read(QUESTION).describes  # the learnt cue 'defined as "'
    unquoted = "Which diseases present with seizure and a finding marked by increased volume of the earlobe?"
    assert trained.read(unquoted).span == unquoted  # no cue opens it ...
    assert trained.read(unquoted).describes  # ... but four words beyond the names and frame words
    assert not trained.read("Which diseases present with seizure?").describes


def test_the_checkpoint_keeps_the_types_training_questions_described(trained: MorRetriever) -> None:
    assert trained.model.described_types == {"Phenotype"}
    older = {k: v for k, v in trained.model.checkpoint().items() if k != "described_types"}
    assert MorModel.load(older).described_types is None


def test_the_planner_runs_a_plan_that_uses_what_the_question_gives(trained: MorRetriever) -> None:
    """The scorer's likeliest plan describes a disease, as no training question does; of the plans
    that describe a phenotype and name a gene, the likeliest answers phenotypes. The planner keeps
    the likeliest plan's answer type and runs the likeliest of its plans that describe a
    phenotype and name a gene, or, where the question describes nothing, that describe nothing."""
    model = MorModel.load(trained.model.checkpoint())
    bias = {
        "answer:Disease": 3.0,
        "answer_restriction:text": 2.8,
        "end:Gene[name]": 2.0,
        "chains:1": 0.5,
        "node:Phenotype[text]": -1.0,
    }
    with torch.no_grad():
        model.planner.bilinear.weight.zero_()
        model.planner.bilinear.bias.zero_()
        for token, value in bias.items():
            model.planner.bilinear.bias[model.planner.index[token]] = value
    width, types = model.planner.config.emb_dim, len(model.planner.config.types)
    logits = model.planner(torch.zeros(1, width), torch.zeros(1, types), model.plan_matrix)[0]
    assert str(model.plans[int(logits.argmax())]).startswith("Disease*[text]")
    question = "Which diseases of XYZ2 show a finding marked by increased volume of the earlobe?"
    reading = QuestionReading(question, (), ("Gene",), {}, torch.zeros(width), describes=True)
    plan, _ = TrainedPlanner(model, ratio=1.0).plans(question, reading)[0]
    assert plan.answer.type == "Disease" and plan.described() == ["Phenotype"]
    assert any(n.type == "Gene" and n.restriction == "name" for c in plan.chains for n in c.nodes[1:])
    undescribed = QuestionReading(question, (), ("Gene",), {}, reading.vector, describes=False)
    plan, _ = TrainedPlanner(model, ratio=1.0).plans(question, undescribed)[0]
    assert plan.answer.type == "Disease" and not plan.described()


def test_merged_plans_recover_the_answer_the_likelier_plan_misses(trained: MorRetriever) -> None:
    # alone, the name-only plan cannot tell D:1 from D:2; with the full plan beside it, at a
    # lower probability, D:2 comes first, and both plans are reported
    alone = MorRetriever(
        trained.store, trained.embedder, trained.model, planner=_ScriptedPlanner([(NAME_ONLY, 1.0)])
    )
    assert alone.retrieve(QUESTION, rerank=False).nodes[0].id != "D:2"
    merged = MorRetriever(
        trained.store,
        trained.embedder,
        trained.model,
        planner=_ScriptedPlanner([(NAME_ONLY, 0.6), (FULL, 0.4)]),
    )
    result = merged.retrieve(QUESTION, rerank=False)
    assert result.nodes[0].id == "D:2"
    assert [(str(p), w) for p, w in result.plans] == [(NAME_ONLY, 0.6), (FULL, 0.4)]
    assert str(result.plan) == NAME_ONLY and result.plan_prob == 0.6


def test_a_plan_whose_named_node_the_question_does_not_name_is_not_run(trained: MorRetriever) -> None:
    # the question names a phenotype ("seizure"), no gene: the gene-named plan has weight 0
    reading = trained.read(QUESTION)
    assert trained.anchors(QUESTION, parse_metapath(GENE_NAMED), reading).named == 0.0
    assert trained.anchors(QUESTION, parse_metapath(FULL), reading).named == 1.0
    merged = MorRetriever(
        trained.store,
        trained.embedder,
        trained.model,
        planner=_ScriptedPlanner([(GENE_NAMED, 0.7), (FULL, 0.3)]),
    )
    runs, _ = merged.candidates(QUESTION)
    assert [str(r.plan) for r in runs] == [FULL] and runs[0].weight == pytest.approx(0.3)
    assert merged.retrieve(QUESTION).nodes[0].id == "D:2"


def test_named_anchor_alternatives_are_kept_best_alias_first(trained: MorRetriever) -> None:
    # "seizure" names HP:3 wholly; other phenotypes found by full-text follow, several kept
    reading = trained.read(QUESTION)
    names = trained.anchors(QUESTION, parse_metapath(FULL), reading).names[(1, 1)]
    assert names[0] == ("HP:3", 1.0)
    assert [score for _, score in names] == sorted((score for _, score in names), reverse=True)


def test_a_named_anchor_typed_with_a_typo_is_held_as_its_name(trained: MorRetriever) -> None:
    # "siezure" is Seizure within one edit: the linker finds it, and the anchor counts it as named
    question = QUESTION.replace("seizure", "siezure")
    reading = trained.read(question)
    assert [(e.id, e.method) for e in reading.linked][:1] == [("HP:3", "fuzzy")]
    anchors = trained.anchors(question, parse_metapath(FULL), reading)
    assert anchors.names[(1, 1)][0] == ("HP:3", 1.0) and anchors.named == 1.0
    assert trained.retrieve(question).nodes[0].id == "D:2"


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
    from kgqa.mor_asker import MorAsker
    from kgqa.saved_questions import load_saved, save_answer

    result = trained.retrieve(QUESTION, top_k=1)
    answer = save_answer(trained.store, MorAsker(trained, max_answers=1).ask(QUESTION))
    assert answer.question_id is not None
    saved = load_saved(trained.store, answer.question_id)
    assert saved.answers == ("D:2",)
    # keys in the graph's direction, whichever way the walk crossed the relationship
    assert set(saved.evidence) >= {("D:2", "DISEASE_PHENOTYPE_POSITIVE", "HP:2")}
    walked = {k for node in result.nodes for t in node.trajectories for k in t.rel_keys}
    assert set(saved.evidence) == walked


def _key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (``evidence[].triples[].head``), lists read through all items."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in {f"{prefix}{k}", *_key_paths(v, f"{prefix}{k}.")}}
    if isinstance(value, list):
        return {p for item in value for p in _key_paths(item, prefix.rstrip(".") + "[].")}
    return set()


def test_mor_and_kgqa_answers_have_the_same_record_and_json_keys(
    trained: MorRetriever, trained_models: Any
) -> None:
    """One question path: a MoR checkpoint and a KGQA one answer with the same Answer record,
    so 'kgqa ask --json' has the same keys, nested ones included."""
    from kgqa.config import AnswerSettings
    from kgqa.mor_asker import MorAsker
    from kgqa.pipeline import Asker

    retriever, extractive = trained_models
    kgqa = Asker(retriever, AnswerSettings(), extractive=extractive).ask("who directed [Cast Away]").to_dict()
    mor = MorAsker(trained, max_answers=3).ask(QUESTION).to_dict()
    assert mor["reader"] == "mor" and mor["answers"][0]["id"] == "D:2" and mor["plans"]
    assert kgqa["answers"] and kgqa["evidence"] and kgqa["plans"] and mor["evidence"]
    assert all(0.0 <= a["score"] <= 1.0 for a in mor["answers"])
    assert mor["evidence"][-1]["triples"], "the best line (last) walks relationships"
    stages = {"timings_ms.", "disambiguation."}  # stage names and a KGQA-only choice are values
    assert {p for p in _key_paths(kgqa) if not p.startswith(tuple(stages))} == {
        p for p in _key_paths(mor) if not p.startswith(tuple(stages))
    }


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
    assert asked["reader"] == "mor" and "MoR" in asked["model"] and asked["browser_cypher"] is None
    # the same layout as a KGQA answer: topics, plans, evidence (best last), answers
    shown = run("ask", QUESTION, "--data-dir", data).splitlines()
    assert shown[0].startswith("topics: ") and shown[1].startswith("plan: Disease*")
    assert any(line.startswith("evidence (") for line in shown)
    assert any(line.startswith("answer (mor): ") for line in shown)
    import kgqa  # the Python API takes the same question path

    with kgqa.open(data_dir=data) as graph:
        assert graph.ask(QUESTION).to_dict().keys() == asked.keys() - {"model", "browser_cypher"}
    log = str(tmp_path / "eval.jsonl")
    summary = json.loads(
        run("eval", str(questions), "--format", "stark", "--data-dir", data, "--log", log, "--json")
    )
    assert 0.0 <= summary["stark"]["mrr"] <= 1.0


def test_interrupted_mor_eval_resumes_to_the_full_runs_summary(
    trained: MorRetriever, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgqa.errors import ConfigError
    from kgqa.eval.mor import evaluate_mor
    from kgqa.retrieval.mor.plan import store_metapath

    path = tmp_path / "qa.csv"
    _write_questions(path)
    examples = list(read_questions(path, "stark"))

    def run(log: Path, selected: list[Any] = examples, fingerprint: str = "f1") -> Any:
        return evaluate_mor(
            trained,
            selected,
            log_path=log,
            gold_plan=lambda e: store_metapath(e.metapath).key,
            fingerprint=fingerprint,
        )

    full = run(tmp_path / "full.jsonl")
    answered: list[str] = []
    retrieve = trained.retrieve

    def interrupted(question: str, **kw: Any) -> Any:
        if len(answered) == 5:
            raise KeyboardInterrupt  # killed mid-run
        answered.append(question)
        return retrieve(question, **kw)

    log = tmp_path / "eval.jsonl"
    monkeypatch.setattr(trained, "retrieve", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(log)
    with log.open("a") as fh:
        fh.write('{"qid": "7", "kind": "dis')  # a line cut short by the kill
    assert len(log.read_text().splitlines()) == 6
    answered.clear()

    def counted(question: str, **kw: Any) -> Any:
        answered.append(question)
        return retrieve(question, **kw)

    monkeypatch.setattr(trained, "retrieve", counted)
    resumed = run(log)
    assert len(answered) == len(examples) - 5 and resumed.resumed == 5 and resumed.n == full.n
    for field in ("stark", "kgqa", "per_kind", "plan_accuracy"):
        assert getattr(resumed, field) == getattr(full, field)
    # a later run over a selection counts only the selected questions, answering none again
    answered.clear()
    part = run(log, examples[3:7])
    assert (part.n, part.resumed, answered) == (4, 4, [])
    with pytest.raises(ConfigError, match="other settings"):
        run(log, fingerprint="f2")
