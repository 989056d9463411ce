"""Answering benchmark: evidence selection and organisation on MetaQA dev (held-out part).

For each hop file it retrieves every question once, then for path pooling off / on (Dijkstra
reselection from the coarse top-500) and each evidence organisation (plain triples, ReG chains,
PathRAG flow paths) it reports, with the extractive reader answering from the entities the
evidence shows:

- Hit@1 and Hit of the extractive reader;
- evidence answer recall: share of gold answers among the evidence entities (the ceiling for
  any reader given that evidence);
- prompt tokens per question: the SubgraphRAG prompt (system + one-shot + evidence + question)
  built for that evidence and counted with the bundled Gemma tokenizer (``--tokenizer gemma``)
  or the chars/4 estimate (``--tokenizer estimate``), without a context limit.

Target (issue 4): ReG chains and PathRAG paths need fewer tokens than plain triples at equal
evidence recall.

usage: python -m bench.ask --data-dir DIR --checkpoint FILE [--size tiny|small|full]
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from bench.common import (
    REPO,
    SHARED_DATA,
    append_jsonl,
    environment,
    markdown_table,
    retriever_settings,
)

HOPS = (1, 2, 3)
SIZES = {"tiny": 10, "small": 200, "full": None}
POOLING = ("none", "dijkstra")
ORGANISATIONS = ("triples", "chains", "paths")


def _token_counter(kind: str) -> Callable[[list[dict[str, str]]], int]:
    """Counts the tokens of a chat prompt as the reader would see it."""
    from kgqa.reasoning.readers.openai_client import estimate_tokens

    if kind == "estimate":
        return estimate_tokens
    from transformers import AutoTokenizer

    from kgqa.reasoning.readers.transformers_client import prepare_bundled_model, render_plain

    tokenizer = AutoTokenizer.from_pretrained(prepare_bundled_model())
    return lambda messages: len(tokenizer(render_plain(messages)).input_ids)


def _score(asker, gathered, gold: set[str]) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Hit@1 / Hit of the extractive reader and evidence answer recall of one question."""
    from kgqa.eval.metrics import score_answers

    sub = gathered.retrieval.prepared.subgraph
    shown = {sub.entity_ids[e] for e in gathered.evidence.entities()}
    answer = asker.read(gathered)
    scores = score_answers([a.id or a.name for a in answer.answers], sorted(gold))
    return {"hit_at_1": scores.hit_at_1, "hit": scores.hit, "evidence_recall": len(gold & shown) / len(gold)}


@click.command()
@click.option(
    "--size",
    type=click.Choice(sorted(SIZES)),
    default="small",
    show_default=True,
    help="Held-out questions per hop file: tiny 10, small 200, full all.",
)
@click.option("--repeat", type=int, default=1, show_default=True, help="Unused (accuracy bench).")
@click.option("--device", default="cpu", show_default=True)
@click.option("--tokenizer", type=click.Choice(["gemma", "estimate"]), default="gemma", show_default=True)
@click.option("--evidence-k", type=int, default=100, show_default=True, help="Triples kept (k').")
@click.option(
    "--flow-theta", type=float, default=None, help="PathRAG pruning threshold (default answer.flow_theta)."
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kgqa-data"),
    show_default=True,
)
@click.option("--checkpoint", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=REPO / "bench" / "results" / "ask.jsonl",
    show_default=True,
)
def main(
    size: str,
    repeat: int,
    device: str,
    tokenizer: str,
    evidence_k: int,
    flow_theta: float | None,
    data_dir: Path,
    checkpoint: Path | None,
    out: Path,
) -> None:
    """Hit@1, evidence recall and prompt tokens per pooling x organisation on MetaQA held-out questions."""

    from kgqa.config import AnswerSettings
    from kgqa.eval.session import select
    from kgqa.eval.splits import hops_for
    from kgqa.pipeline import Asker, Gathered, open_asker
    from kgqa.reasoning.prompts import build_prompt
    from kgqa.retrieval.organise import organise

    settings = retriever_settings(data_dir, device, checkpoint)
    count = _token_counter(tokenizer)
    configs = [
        AnswerSettings(
            pooling=p,
            organisation=o,
            evidence_k=evidence_k,
            flow_theta=settings.answer.flow_theta if flow_theta is None else flow_theta,
        )
        for p in POOLING
        for o in ORGANISATIONS
    ]
    rows = []
    record = {"bench": "ask", "size": size, "tokenizer": tokenizer, **environment(device), "results": []}
    with open_asker(settings) as base:
        for hop in HOPS:
            path = SHARED_DATA / "metaqa" / f"{hop}-hop" / "qa_dev.txt"
            lines = path.with_name("qa_dev_consistent_idx.txt")
            if not path.exists():
                raise click.ClickException(f"{path} is not available (benchmarks read ../shared/data)")
            examples = select(settings, path, "metaqa", limit=SIZES[size], lines_file=lines, heldout=True)
            totals = {
                i: {"hit_at_1": 0.0, "hit": 0.0, "evidence_recall": 0.0, "tokens": 0.0}
                for i in range(len(configs))
            }
            n = 0
            for example in examples:
                hops = hops_for(example, settings.retrieval.hops)
                retrieval = base.retriever.retrieve(example.question, topic_ids=example.topic_ids, hops=hops)
                n += 1
                for i, config in enumerate(configs):
                    evidence = organise(retrieval, config, hops=hops)
                    asker = Asker(base.retriever, config, extractive=base.extractive)
                    for key, value in _score(
                        asker, Gathered(retrieval, evidence), set(example.answers)
                    ).items():
                        totals[i][key] += value
                    prompt = build_prompt(
                        example.question,
                        evidence.items,
                        form=evidence.form,
                        count_tokens=count,
                        context_tokens=10**9,
                        max_new_tokens=0,
                    )
                    totals[i]["tokens"] += prompt.prompt_tokens
            for i, config in enumerate(configs):
                mean = {k: v / max(n, 1) for k, v in totals[i].items()}
                rows.append(
                    [
                        f"{hop}-hop",
                        n,
                        config.pooling,
                        config.organisation,
                        f"{mean['hit_at_1']:.4f}",
                        f"{mean['hit']:.4f}",
                        f"{mean['evidence_recall']:.4f}",
                        f"{mean['tokens']:.0f}",
                    ]
                )
                record["results"].append({"hop": hop, "n": n, **config.model_dump(), **mean})
    click.echo(
        f"MetaQA dev held-out ({size}), extractive reader, k' = {evidence_k}, "
        f"flow theta {configs[0].flow_theta}, "
        f"checkpoint {settings.checkpoint_path}, tokens by {tokenizer}"
    )
    click.echo(
        markdown_table(
            ["split", "n", "pooling", "organisation", "Hit@1", "Hit", "evidence recall", "prompt tokens"],
            rows,
        )
    )
    append_jsonl(out, record)


if __name__ == "__main__":
    main()
