"""Typed plans: notation round trip, validation, and enumeration against brute force."""

from __future__ import annotations

import itertools

import pytest

from kgqa.errors import ConfigError
from kgqa.retrieval.mor.plan import (
    Chain,
    Hop,
    Metapath,
    PlanNode,
    Schema,
    enumerate_plans,
    parse_metapath,
    store_metapath,
    validate,
)

SCHEMA = Schema(frozenset({("Disease", "HAS", "Phenotype"), ("Phenotype", "IS_A", "Phenotype")}))


@pytest.mark.parametrize(
    "text",
    [
        "disease* -disease_phenotype_positive-> phenotype[text] AND disease* -disease_protein-> gene[name]",
        "phenotype* -phenotype_phenotype{1,2}-> phenotype[text] AND phenotype* <-dpp- disease[name]",
        "phenotype*[text] -phenotype_phenotype-> phenotype[name]",
        "disease* -dpp-> phenotype[text] <-phenotype_protein- gene[name]",
    ],
)
def test_parse_metapath_round_trips_the_notation(text: str) -> None:
    assert str(parse_metapath(text)) == text


@pytest.mark.parametrize(
    "text", ["disease -r-> gene[name]", "disease* -r- gene[name]", "disease* -r{1,3}-> x[name]"]
)
def test_parse_metapath_rejects_malformed_plans(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_metapath(text)


def test_store_metapath_uses_ingest_names() -> None:
    plan = store_metapath("disease* -disease_protein-> gene[name]")
    assert str(plan) == "Disease* -DISEASE_PROTEIN-> Gene[name]"


def test_validate_names_what_the_schema_lacks() -> None:
    assert validate(parse_metapath("Disease* -HAS-> Phenotype[text]"), SCHEMA) == []
    assert validate(parse_metapath("Phenotype* <-HAS- Disease[name]"), SCHEMA) == []
    assert validate(parse_metapath("Disease* <-HAS- Phenotype[text]"), SCHEMA)  # wrong direction
    assert validate(parse_metapath("Disease* -HAS{1,2}-> Phenotype[text]"), SCHEMA)  # not a self type
    assert validate(parse_metapath("Disease* -HAS-> Phenotype"), SCHEMA)  # no anchor


def _brute_force(schema: Schema, max_hops: int) -> set[tuple[str, ...]]:
    """Every syntactically possible plan over the schema's names, kept when ``validate`` accepts it."""
    labels = schema.labels
    rels = sorted({t[1] for t in schema.triples})
    hops = [Hop(r, fwd, reps) for r in rels for fwd in (True, False) for reps in (1, 2)]
    nodes = [PlanNode(lbl, res) for lbl in labels for res in ("", "text", "name")]

    def chains(answer: PlanNode, length: int) -> list[Chain]:
        return [
            Chain((answer, *(n for _, n in steps)), tuple(h for h, _ in steps))
            for steps in itertools.product(itertools.product(hops, nodes), repeat=length)
        ]

    keys: set[tuple[str, ...]] = set()
    for answer in (PlanNode(lbl, res) for lbl in labels for res in ("", "text", "name")):
        bare = PlanNode(answer.type)
        for lengths in [(n,) for n in range(1, max_hops + 1)] + [
            (a, b) for a in range(1, max_hops) for b in range(1, max_hops) if a + b <= max_hops
        ]:
            firsts = chains(answer, lengths[0])
            seconds = chains(bare, lengths[1]) if len(lengths) == 2 else [None]
            for first, second in itertools.product(firsts, seconds):
                plan = Metapath((first,) if second is None else (first, second))
                if not validate(plan, schema):
                    keys.add(plan.key)
    return keys


@pytest.mark.parametrize(
    ("schema", "max_hops"), [(SCHEMA, 2), (Schema(frozenset({("Gene", "LINKED", "Disease")})), 3)]
)
def test_enumerate_plans_equals_brute_force_on_a_small_typed_schema(schema: Schema, max_hops: int) -> None:
    enumerated = enumerate_plans(schema, max_hops=max_hops)
    keys = [p.key for p in enumerated]
    assert len(keys) == len(set(keys)), "a plan is enumerated twice"
    assert set(keys) == _brute_force(schema, max_hops=max_hops)
    assert all(validate(p, schema) == [] for p in enumerated)
