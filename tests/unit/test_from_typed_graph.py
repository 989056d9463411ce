"""MoR questions generated from a typed graph (``kgqa train --format stark --from-graph``):
deterministic for a seed, every answer set exactly what the graph gives for the question's
metapath and pinned anchors (checked against a brute-force search over the source edges), and
worded from the graph's own type and relation names (a recipe graph, nothing like HPO)."""

from __future__ import annotations

import csv
import itertools
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ingest.embedding import embed_store
from ingest.loader import load
from ingest.readers.typed_csv import read_typed_csv
from kgqa.names import label_name, relationship_type
from kgqa.retrieval.mor.plan import Chain, store_metapath
from kgqa.store.kglite_store import KgliteStore
from retriever_training.from_typed_graph import (
    generate_records,
    plan_shape,
    read_typed_questions,
    typed_questions_file,
)
from tests.conftest import FakeEmbedder

CUISINES = ["Sicilian", "Bengali", "Oaxacan", "Breton"]
INGREDIENTS = [
    "saffron", "fennel", "tamarind", "chard", "sorrel", "quince", "anchovy", "mustard seed",
    "cardamom", "hazelnut", "leek", "buckwheat",
]  # fmt: skip


def _graph(seed: int = 7) -> tuple[list[list[str]], list[tuple[str, str, str]]]:
    """A small recipe graph: recipes use ingredients and come from cuisines, ingredients pair
    with ingredients; every recipe and ingredient has a text of its own, cuisines boilerplate."""
    rng = random.Random(seed)
    nodes = [["id", "type", "name", "text"]]
    for i, c in enumerate(CUISINES):
        nodes.append([f"c{i}", "cuisine", c, f"{c}. A regional cuisine."])
    for i, name in enumerate(INGREDIENTS):
        nodes.append(
            [
                f"i{i}",
                "ingredient",
                name.title(),
                f"A {rng.choice(['bitter', 'sweet', 'sharp'])} "
                f"{rng.choice(['leaf', 'seed', 'root', 'fruit'])} used {i + 1} ways in {name} cookery.",
            ]
        )
    edges: set[tuple[str, str, str]] = set()
    for r in range(20):
        dish = f"{rng.choice(['Braised', 'Roast', 'Stewed', 'Pickled'])} dish number {r}"
        nodes.append(
            [
                f"r{r}",
                "recipe",
                dish,
                f"Slowly cooked {rng.choice(INGREDIENTS)} with "
                f"{rng.choice(INGREDIENTS)} served {rng.choice(['hot', 'cold'])} for feast {r}.",
            ]
        )
        edges.add((f"r{r}", "recipe_from_cuisine", f"c{rng.randrange(len(CUISINES))}"))
        for i in rng.sample(range(len(INGREDIENTS)), 3):
            edges.add((f"r{r}", "recipe_uses_ingredient", f"i{i}"))
    for a, b in itertools.combinations(range(len(INGREDIENTS)), 2):
        if rng.random() < 0.15:
            edges.add((f"i{a}", "pairs_with", f"i{b}"))
    return nodes, sorted(edges)  # fmt: skip


@pytest.fixture(scope="module")
def recipes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KgliteStore, list[Any]]]:
    folder = tmp_path_factory.mktemp("recipes")
    nodes, edges = _graph()
    with (folder / "nodes.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(nodes)
    with (folder / "edges.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([["src", "type", "dst"], *edges])
    with KgliteStore(folder / "graph.kgl") as store:
        items = read_typed_csv(folder / "nodes.csv", edges=folder / "edges.csv")
        load(store, items, source="recipes", fmt="typed-csv", source_key="recipes")
        embed_store(store, FakeEmbedder())
        yield store, edges


def _brute_force(
    record: dict[str, Any], edges: Sequence[tuple[str, str, str]], types: dict[str, str]
) -> set[str]:
    """Every node of the answer type with, for each chain, a walk of its hops (``{1,2}``: one
    or two of that hop) in the stored directions through nodes of its types, never twice
    through a node, that passes through the record's pinned nodes where it pins one."""
    plan = store_metapath(record["metapath"])
    pinned = record["pinned"]
    out: dict[tuple[str, bool], dict[str, set[str]]] = {}
    for h, r, t in edges:
        out.setdefault((relationship_type(r), True), {}).setdefault(h, set()).add(t)
        out.setdefault((relationship_type(r), False), {}).setdefault(t, set()).add(h)

    def walks(chain: Chain, pins: Sequence[str | None], at: int, path: tuple[str, ...]) -> bool:
        if at == len(chain.hops):
            return True
        hop, node, pin = chain.hops[at], chain.nodes[at + 1], pins[at]
        here = [path]
        for _ in range(hop.max_hops):
            here = [
                (*p, n)
                for p in here
                for n in out.get((hop.rel_type, hop.forward), {}).get(p[-1], ())
                if n not in p
            ]
            for p in here:
                last_type_ok = types[p[-1]] == node.type and all(
                    types[x] == node.type for x in p[len(path) :]
                )
                if last_type_ok and (pin is None or p[-1] == pin) and walks(chain, pins, at + 1, p):
                    return True
        return False

    answers = set()
    for node, node_type in types.items():
        if node_type != plan.answer.type or (pinned[0][0] is not None and node != pinned[0][0]):
            continue
        if all(walks(c, pins, 0, (node,)) for c, pins in zip(plan.chains, pinned[1:], strict=True)):
            answers.add(node)
    return answers  # fmt: skip


def test_generation_is_deterministic_for_a_seed(recipes: tuple[KgliteStore, list[Any]]) -> None:
    store, _ = recipes
    first = generate_records(store, count=40, seed=3)
    assert first == generate_records(store, count=40, seed=3)
    assert first != generate_records(store, count=40, seed=4)


def test_every_answer_set_is_what_the_graph_gives_for_the_metapath_and_anchors(
    recipes: tuple[KgliteStore, list[Any]],
) -> None:
    store, edges = recipes
    nodes, _ = _graph()
    types = {row[0]: label_name(row[1]) for row in nodes[1:]}
    records = generate_records(store, count=80, seed=1)
    assert len(records) >= 40
    assert len({plan_shape(store_metapath(r["metapath"])) for r in records}) >= 8
    for record in records:
        assert set(record["answer_ids"]) == _brute_force(record, edges, types), record["query"]


def test_questions_are_worded_from_the_graphs_own_names_and_texts(
    recipes: tuple[KgliteStore, list[Any]],
) -> None:
    store, _ = recipes
    names = {row[0]: row[2] for row in _graph()[0][1:]}
    records = generate_records(store, count=80, seed=1)
    described = [r for r in records if r["text_constraint"]]
    assert described and all(r["text_constraint"] in r["query"] for r in described)
    # cuisine texts are boilerplate ("<name>. A regional cuisine."): never a description
    assert not any("regional cuisine" in r["text_constraint"] for r in records)
    assert all(names[i] in r["query"] for r in records for i in r["anchor_ids"]["name"])
    words = " ".join(r["query"] for r in records)
    for phrase in ("recipe uses ingredient", "pairs with", "recipe from cuisine", "ingredient", "recipe"):
        assert phrase in words


def test_the_question_file_is_reused_and_read_as_stark_questions(
    recipes: tuple[KgliteStore, list[Any]], tmp_path: Path
) -> None:
    store, _ = recipes
    made = typed_questions_file(store, tmp_path, count=30, seed=0)
    again = typed_questions_file(store, tmp_path, count=30, seed=0)
    assert not made.cached and again.cached and made.path == again.path
    assert made.questions == again.questions and made.by_shape == again.by_shape
    assert sum(made.by_shape.values()) == made.questions and made.surface_forms["distinct"] >= 2
    examples = read_typed_questions(Path(made.path))
    assert len(examples) == made.questions
    assert all(e.metapath and e.answers and e.qtype for e in examples)
    lines = Path(made.path).read_text().splitlines()
    assert json.loads(lines[0])["id"] == "graph:0"


def test_cli_trains_mor_on_questions_from_the_graph_alone(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kgqa.cli import cli

    nodes, edges = _graph()
    with (tmp_path / "nodes.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(nodes)
    with (tmp_path / "edges.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([["src", "type", "dst"], *edges])
    data, out = str(tmp_path / "d"), str(tmp_path / "mor.pt")

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    nodes_csv, edges_csv = str(tmp_path / "nodes.csv"), str(tmp_path / "edges.csv")
    run("ingest", nodes_csv, "--edges", edges_csv, "--format", "typed-csv", "--data-dir", data, "--json")
    train = ("train", "--format", "stark", "--from-graph", "--data-dir", data, "--out", out, "--json")
    train += ("--set", "train.graph_questions=60", "--set", "train.epochs=2")
    report = json.loads(run(*train))
    made = report["from_graph"]
    assert made["questions"] == sum(made["by_shape"].values()) > 30 and not made["cached"]
    assert Path(made["path"]).is_file() and made["surface_forms"]["distinct"] > 1
    assert report["questions"]["train"] + report["questions"]["val"] == made["questions"]
    assert report["questions"]["val"] > 0 and Path(out).is_file()
    assert json.loads(run(*train))["from_graph"]["cached"]
