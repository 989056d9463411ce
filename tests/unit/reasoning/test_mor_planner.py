"""The LLM planner: JSON plans checked against the schema, repaired or rejected, never run blindly."""

from __future__ import annotations

import json

import pytest
import torch

from kgqa.errors import PlanError
from kgqa.reasoning.mor_planner import LLMPlanner
from kgqa.retrieval.mor.plan import Metapath, Schema, parse_metapath
from kgqa.retrieval.mor.retriever import QuestionReading
from tests.llm_fakes import ScriptedLLM

SCHEMA = Schema(
    frozenset({("Disease", "DISEASE_PROTEIN", "Gene"), ("Gene", "PHENOTYPE_PROTEIN", "Phenotype")})
)
READING = QuestionReading("a description", (), (), {}, torch.zeros(4))
GOLD = "Gene* <-DISEASE_PROTEIN- Disease[name] AND Gene* -PHENOTYPE_PROTEIN-> Phenotype[text]"


class _Fallback:
    def plans(self, question: str, reading: QuestionReading) -> list[tuple[Metapath, float]]:
        return [(parse_metapath("Gene* -PHENOTYPE_PROTEIN-> Phenotype[name]"), 0.5)]


def test_llm_planner_accepts_a_valid_plan_and_shows_the_schema() -> None:
    llm = ScriptedLLM([f'Sure: {{"metapath": "{GOLD}"}}'])
    [(plan, prob)] = LLMPlanner(llm, SCHEMA).plans("which genes ...", READING)
    assert (str(plan), prob) == (GOLD, 1.0)
    prompt = llm.calls[0]["messages"][1]["content"]
    assert "(Disease)-[:DISEASE_PROTEIN]->(Gene)" in prompt and llm.calls[0]["temperature"] == 0.0


def test_llm_planner_repairs_names_and_a_reversed_hop() -> None:
    written = "gene* -disease_protein-> disease[name] AND gene* -phenotype_protein-> phenotype[text]"
    reply = json.dumps({"metapath": written})
    [(plan, _)] = LLMPlanner(ScriptedLLM([reply]), SCHEMA).plans("q", READING)
    assert str(plan) == GOLD


@pytest.mark.parametrize(
    "reply",
    [
        "no json here",
        '{"metapath": "Gene* -NOT_A_TYPE-> Phenotype[text]"}',
        '{"metapath": "Gene* -PHENOTYPE_PROTEIN-> Phenotype"}',  # no anchor
        '{"metapath": "Gene -> Phenotype"}',
    ],
)
def test_llm_planner_rejects_invalid_plans_or_falls_back(reply: str) -> None:
    with pytest.raises(PlanError):
        LLMPlanner(ScriptedLLM([reply]), SCHEMA).plans("q", READING)
    [(plan, prob)] = LLMPlanner(ScriptedLLM([reply]), SCHEMA, fallback=_Fallback()).plans("q", READING)
    assert (str(plan), prob) == ("Gene* -PHENOTYPE_PROTEIN-> Phenotype[name]", 0.5)
