"""Answering benchmark: evidence selection and organisation under a token budget, held-out questions.

For each question file (MetaQA 1/2/3-hop dev; ``--dataset pathquestion``: PQ-2H and PQ-3H, whose
KB must be loaded into ``--data-dir`` with a checkpoint trained on it) it retrieves every question
once, then for each evidence selection and organisation and each evidence budget of 500, 1,000
and 2,000 tokens it reports:

- evidence answer recall: share of gold answers among the entities of the evidence lines that fit
  the budget (the ceiling for any reader given that evidence);
- prompt tokens per question: the SubgraphRAG prompt (system + one-shot + evidence + question)
  with those lines, counted with the bundled Gemma tokenizer (``--tokenizer gemma``) or the
  chars/4 estimate (``--tokenizer estimate``).

Selections: ``ranked``, the current one: the top-k' triples (k' = 100, path pooling off / on,
Dijkstra reselection from the coarse top-500) as plain triples, ReG chains or PathRAG flow paths,
trimmed to the budget weakest first as the LLM reader does; ``plans``, the plan- and answer-guided
chains of issue 18 (:mod:`kgqa.retrieval.evidence.plan_evidence`), chosen to fit the budget.

Targets (issue 18): recall >= 0.99 on every MetaQA hop and on PQ-3H at 1,000 tokens; at least 30%
fewer prompt tokens than plain triples at equal recall.

usage: python -m bench.ask --data-dir DIR --checkpoint FILE [--dataset metaqa|pathquestion]
       [--split NAME] [--size tiny|small|full]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import click

from bench.common import (
    append_jsonl,
    environment,
    markdown_table,
    out_option,
    retriever_settings,
)
from bench.retrieval import FILES

SIZES = {"tiny": 10, "small": 200, "full": None}
BUDGETS = (500, 1000, 2000)
#: (selection, pooling, organisation): the current top-k' selections, then plan-guided chains.
CONFIGS = (
    *(("ranked", p, o) for p in ("none", "dijkstra") for o in ("triples", "chains", "paths")),
    ("plans", "-", "chains"),
)


def _token_counter(kind: str) -> Callable[[list[dict[str, str]]], int]:
    """Counts the tokens of a chat prompt as the reader would see it."""
    from kgqa.reasoning.readers.openai_client import estimate_tokens

    if kind == "estimate":
        return estimate_tokens
    from transformers import AutoTokenizer

    from kgqa.reasoning.readers.transformers_client import prepare_bundled_model, render_plain

    tokenizer = AutoTokenizer.from_pretrained(prepare_bundled_model())
    return lambda messages: len(tokenizer(render_plain(messages)).input_ids)


def _bare(question: str, count: Callable[[list[dict[str, str]]], int], form: str) -> int:
    """Tokens of the prompt without evidence."""
    from kgqa.reasoning.prompts import base_messages, user_message

    return count([*base_messages(form), user_message(question, [], form=form)])  # type: ignore[arg-type]


def _fit(question, evidence, count, budget: int):  # type: ignore[no-untyped-def]
    """The prompt the LLM reader builds when ``budget`` tokens are left for evidence."""
    from kgqa.reasoning.prompts import build_prompt

    return build_prompt(
        question,
        evidence.items,
        form=evidence.form,
        count_tokens=count,
        context_tokens=_bare(question, count, evidence.form) + budget,
        max_new_tokens=0,
    )


@click.command()
@click.option(
    "--size",
    type=click.Choice(sorted(SIZES)),
    default="small",
    show_default=True,
    help="Held-out questions per file: tiny 10, small 200, full all.",
)
@click.option(
    "--dataset", type=click.Choice(["metaqa", "pathquestion", "wc2014"]), default="metaqa", show_default=True
)
@click.option("--split", "splits", multiple=True, help="Only these files of the dataset (e.g. PQ-3H).")
@click.option("--repeat", type=int, default=1, show_default=True, help="Unused (accuracy bench).")
@click.option("--device", default="cpu", show_default=True)
@click.option("--tokenizer", type=click.Choice(["gemma", "estimate"]), default="gemma", show_default=True)
@click.option("--evidence-k", type=int, default=100, show_default=True, help="Triples kept (k').")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kgqa-data"),
    show_default=True,
)
@click.option("--checkpoint", type=click.Path(dir_okay=False, path_type=Path), default=None)
@out_option("ask")
def main(
    size: str,
    dataset: str,
    splits: tuple[str, ...],
    repeat: int,
    device: str,
    tokenizer: str,
    evidence_k: int,
    data_dir: Path,
    checkpoint: Path | None,
    out: Path,
) -> None:
    """Evidence recall and prompt tokens per selection x organisation x budget, held-out questions."""

    from kgqa.config import AnswerSettings
    from kgqa.eval.session import select
    from kgqa.pipeline import open_asker
    from kgqa.reasoning.prompts import evidence_budget
    from kgqa.retrieval.evidence.organise import ChainGuide, organise
    from kgqa.types import TokenBudget

    settings = retriever_settings(data_dir, device, checkpoint)
    count = _token_counter(tokenizer)
    rows = []
    record = {
        "bench": "ask",
        "dataset": dataset,
        "size": size,
        "tokenizer": tokenizer,
        **environment(device),
        "results": [],
    }
    with open_asker(settings) as base:
        assert base.extractive is not None
        for name, path, lines, fmt in [f for f in FILES[dataset] if not splits or f[0] in splits]:
            if not path.exists():
                raise click.ClickException(f"{path} is not available (benchmarks read ../shared/data)")
            examples = select(settings, path, fmt, limit=SIZES[size], lines_file=lines, heldout=True)
            totals = {
                (c, b): {"evidence_recall": 0.0, "tokens": 0.0, "evidence_tokens": 0.0}
                for c in CONFIGS
                for b in BUDGETS
            }
            n = 0
            for example in examples:
                hops = settings.retrieval.hops
                retrieval = base.retriever.retrieve(example.question, topic_ids=example.topic_ids, hops=hops)
                sub = retrieval.prepared.subgraph
                gold = set(example.answers)
                entity_scores = base.extractive.entity_probabilities(retrieval)
                counter = evidence_budget(
                    example.question,
                    form="paths",
                    count_tokens=count,
                    context_tokens=0,
                    max_new_tokens=0,
                    tokens=0,
                ).count
                line_tokens = functools.lru_cache(maxsize=None)(counter)
                bare = functools.lru_cache(maxsize=None)(functools.partial(_bare, example.question, count))
                n += 1
                for config in CONFIGS:
                    selection, pooling, organisation = config
                    answer = AnswerSettings(
                        pooling="dijkstra" if pooling == "-" else pooling,
                        organisation=organisation,
                        chain_selection=selection,
                        evidence_k=evidence_k,
                    )
                    ranked = organise(retrieval, answer, hops=hops) if selection == "ranked" else None
                    for budget in BUDGETS:
                        guide = ChainGuide(entity_scores, TokenBudget(budget, line_tokens))
                        evidence = ranked or organise(retrieval, answer, hops=hops, guide=guide)
                        prompt = _fit(example.question, evidence, count, budget)
                        shown = {sub.entity_ids[e] for item in prompt.items_used for e in item.entities}
                        totals[(config, budget)]["evidence_recall"] += len(gold & shown) / len(gold)
                        totals[(config, budget)]["tokens"] += prompt.prompt_tokens
                        totals[(config, budget)]["evidence_tokens"] += prompt.prompt_tokens - bare(
                            evidence.form
                        )
            for (config, budget), total in totals.items():
                mean = {k: v / max(n, 1) for k, v in total.items()}
                selection, pooling, organisation = config
                rows.append(
                    [
                        name,
                        n,
                        selection,
                        pooling,
                        organisation,
                        budget,
                        f"{mean['evidence_recall']:.4f}",
                        f"{mean['evidence_tokens']:.0f}",
                        f"{mean['tokens']:.0f}",
                    ]
                )
                record["results"].append(
                    {
                        "split": name,
                        "n": n,
                        "selection": selection,
                        "pooling": pooling,
                        "organisation": organisation,
                        "budget": budget,
                        **mean,
                    }
                )
    click.echo(
        f"{dataset} held-out ({size}), k' = {evidence_k} for ranked selections, "
        f"checkpoint {settings.checkpoint_path}, tokens by {tokenizer}"
    )
    click.echo(
        markdown_table(
            [
                "split",
                "n",
                "selection",
                "pooling",
                "organisation",
                "budget",
                "evidence recall",
                "evidence tokens",
                "prompt tokens",
            ],
            rows,
        )
    )
    append_jsonl(out, record)


if __name__ == "__main__":
    main()
