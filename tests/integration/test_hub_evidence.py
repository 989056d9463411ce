"""Issue 18 on the bundled MetaQA slice: "who directed the films starring [Tom Hanks]", a hub topic.

Scores and plans are set the way a trained checkpoint rates this question: the scorer likes the
first hop (Tom Hanks's 31 STARRED_ACTORS triples) best, the planner likes <-STARRED_ACTORS,
DIRECTED_BY->, the reader likes the directors. Ranked triples then spend 30 items on the fan-out;
plan-guided chains show the whole chains to every director.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from ingest.loader import load
from ingest.readers.metaqa import read_metaqa
from kgqa.config import AnswerSettings
from kgqa.reasoning.prompts import evidence_budget
from kgqa.reasoning.readers.openai_client import estimate_tokens
from kgqa.retrieval.evidence.organise import ChainGuide, organise
from kgqa.retrieval.graph.subgraph import Subgraph, extract_subgraph
from kgqa.retrieval.models.plans import RankedPlans, enumerate_plans
from kgqa.retrieval.retriever import Retrieval
from kgqa.store.kglite_store import KgliteStore
from kgqa.types import TokenBudget

SLICE = Path(__file__).resolve().parents[2] / "examples" / "metaqa_movies" / "kb.txt"
QUESTION = "who directed the films starring [Tom Hanks]"


@pytest.fixture(scope="module")
def hanks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retrieval]:
    with KgliteStore(tmp_path_factory.mktemp("slice") / "graph.kgl") as store:
        load(store, read_metaqa(SLICE), source=str(SLICE), fmt="metaqa", source_key="slice")
        sub = extract_subgraph(store, ["Tom Hanks"], hops=2)
    yield _retrieval(sub)


def _signed(sub: Subgraph, relation: str, backward: bool) -> int:
    return 2 * sub.relation_types.index(relation) + int(backward)


def _retrieval(sub: Subgraph) -> Retrieval:
    starred = sub.rel == sub.relation_types.index("STARRED_ACTORS")
    directed = sub.rel == sub.relation_types.index("DIRECTED_BY")
    first_hop = starred & (sub.tail == 0)
    probabilities = torch.full((sub.num_triples,), 0.1)
    probabilities[directed] = 0.6
    probabilities[first_hop] = 0.9
    plans = enumerate_plans(sub, 2)
    gold = [_signed(sub, "STARRED_ACTORS", True), _signed(sub, "DIRECTED_BY", False)]
    is_gold = (plans.steps == torch.tensor(gold)).all(dim=1)
    plan_probability = torch.where(is_gold, 0.8, 0.2 / (plans.num_plans - 1))
    prepared = SimpleNamespace(subgraph=sub, hops=2)
    names = {e: e for e in sub.entity_ids}
    return Retrieval(
        QUESTION, (), prepared, probabilities, probabilities, names, {}, RankedPlans(plans, plan_probability)
    )  # type: ignore[arg-type]


def _directors(sub: Subgraph) -> set[str]:
    """Directors of Tom Hanks's films in the slice (not himself)."""
    films = {
        int(h)
        for h, r, t in zip(sub.head, sub.rel, sub.tail, strict=True)
        if sub.relation_types[r] == "STARRED_ACTORS" and t == 0
    }
    return {
        sub.entity_ids[int(t)]
        for h, r, t in zip(sub.head, sub.rel, sub.tail, strict=True)
        if sub.relation_types[r] == "DIRECTED_BY" and int(h) in films and int(t) != 0
    }


def test_ranked_triples_spend_30_items_on_the_hub_fan_out(hanks: Retrieval) -> None:
    settings = AnswerSettings(organisation="chains", chain_selection="ranked", pooling="none", evidence_k=30)
    evidence = organise(hanks, settings, hops=2)
    assert not any("DIRECTED_BY" in item.text for item in evidence.items)


def test_plan_chains_show_whole_chains_to_every_director(hanks: Retrieval) -> None:
    sub = hanks.prepared.subgraph
    directors = _directors(sub)
    assert len(directors) > 20  # a hub: more films than the 30 ranked items can carry both hops of
    # What the reader would say: the gold plan's ends are likely answers, the rest are not.
    scores = torch.full((sub.num_entities,), 0.05)
    scores[[sub.entity_ids.index(d) for d in directors]] = 0.9
    scores[0] = 0.0
    budget = evidence_budget(
        QUESTION,
        form="paths",
        count_tokens=estimate_tokens,
        context_tokens=8192,
        max_new_tokens=256,
        tokens=1000,
    )
    settings = AnswerSettings(organisation="chains", evidence_k=30)
    evidence = organise(hanks, settings, hops=2, guide=ChainGuide(scores, budget))
    assert len(evidence.items) <= 30
    best = evidence.items[-1].text
    prefix, _, ends = best.rpartition(" -> DIRECTED_BY -> ")
    assert prefix.startswith("Tom Hanks <- STARRED_ACTORS <- ")
    assert set(ends.split(" | ")) == directors
    # Every director is reached through a film of Tom Hanks's that the line shows.
    films = set(prefix.removeprefix("Tom Hanks <- STARRED_ACTORS <- ").split(" | "))
    for t in evidence.items[-1].triples:
        h, r, tl = (int(x) for x in (evidence.graph.head[t], evidence.graph.rel[t], evidence.graph.tail[t]))
        if sub.relation_types[r] == "DIRECTED_BY":
            assert sub.entity_ids[h] in films and sub.entity_ids[tl] in directors
    used = sum(budget.count(item.text) for item in evidence.items)
    assert used <= 1000


def test_plan_chains_below_the_floor_stay_out_whatever_the_budget(hanks: Retrieval) -> None:
    sub = hanks.prepared.subgraph
    scores = torch.full((sub.num_entities,), 0.05)
    scores[[sub.entity_ids.index(d) for d in _directors(sub)]] = 0.9
    budget = TokenBudget(100_000, len)  # room for every chain
    everything = organise(
        hanks,
        AnswerSettings(organisation="chains", chain_floor=0.0),
        hops=2,
        guide=ChainGuide(scores, budget),
    )
    # Only the gold plan's chains to the directors are worth .8 * .9; the rest at most .8 * .05.
    floored = organise(
        hanks,
        AnswerSettings(organisation="chains", chain_floor=0.5),
        hops=2,
        guide=ChainGuide(scores, budget),
    )
    assert len(everything.items) > 1
    assert [item.text for item in floored.items] == [everything.items[-1].text]
