"""Wording benchmark: MetaQA questions as a person words them, not as the templates do.

``bench/wordings.tsv`` holds 36 questions written by hand ("what actors are in Pulp Fiction?",
"who acted alongside Audrey Hepburn", "which films did spielberg direct"), each with the topic
and the relation path it asks for, from which the gold answers are walked on MetaQA's KB
(``../shared/data/metaqa/kb.txt.gz``); a relation followed by ``-`` is walked from tail to head,
and a path of two steps or more never answers with its topic. Each question is asked as it
stands, with no topic and no hop count (:meth:`kgqa.open`'s ``ask``), train-free or with
``--checkpoint``. Per question: Hit@1 (the first answer is a gold one) and whether the answer
set is the gold set; the misses are listed.

The questions were written to probe wordings the templates lack and were read while changing
the linker and the name match (docs/decisions.md), so this is a development probe, not a
held-out score.

usage: python -m bench.wordings --data-dir DIR [--checkpoint FILE]
"""

from __future__ import annotations

import csv
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import click

from bench import common
from ingest.readers.metaqa import read_metaqa
from kgqa.types import TripleRecord

QUESTIONS = Path(__file__).with_name("wordings.tsv")
KB = common.SHARED_DATA / "metaqa" / "kb.txt.gz"

#: (entity, relation) -> the entities one step away, forwards and backwards.
Index = dict[tuple[str, str], set[str]]


def read_kb(path: Path) -> tuple[Index, Index]:
    """MetaQA's KB as ingest reads it (:func:`~ingest.readers.metaqa.read_metaqa`), indexed by
    (head, relation) and (tail, relation)."""
    forward: Index = defaultdict(set)
    backward: Index = defaultdict(set)
    for item in read_metaqa(path):
        if isinstance(item, TripleRecord):
            forward[(item.head, item.relation)].add(item.tail)
            backward[(item.tail, item.relation)].add(item.head)
    return forward, backward


def gold_answers(forward: Index, backward: Index, topic: str, path: str) -> set[str]:
    """The ends of ``path`` ("directed_by-,starred_actors": comma-separated steps, ``-`` walks
    from tail to head) walked from ``topic``; without the topic where the path has several steps
    ("who acted alongside X" is not answered by X)."""
    steps = path.split(",")
    ends = {topic}
    for step in steps:
        index, relation = (backward, step[:-1]) if step.endswith("-") else (forward, step)
        ends = {far for near in ends for far in index.get((near, relation), set())}
    return ends - {topic} if len(steps) > 1 else ends


@click.command()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="A store with the whole MetaQA KB loaded.",
)
@click.option(
    "--checkpoint",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A trained checkpoint; train-free without.",
)
@common.out_option("wordings")
def main(data_dir: Path, checkpoint: Path | None, out: Path) -> None:
    """Ask the hand-worded questions and print Hit@1, whole answer sets and the misses."""
    import kgqa

    if not KB.is_file():
        raise click.ClickException(
            f"MetaQA's KB is not at {KB} (the bench reads ../shared/data beside the repo)"
        )
    forward, backward = read_kb(KB)
    with QUESTIONS.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    graph = kgqa.open(data_dir, **({"checkpoint": checkpoint} if checkpoint else {}))
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    for question, topic, path in rows:
        gold = gold_answers(forward, backward, topic, path)
        names = [a.name for a in graph.ask(question).answers]
        results.append(
            {
                "question": question,
                "hit": bool(names) and names[0] in gold,
                "whole": set(names) == gold,
                "answers": names[:3],
                "gold": len(gold),
            }
        )
    seconds = time.perf_counter() - started
    n = len(results)
    hits, whole = sum(r["hit"] for r in results), sum(r["whole"] for r in results)
    reader = "train-free" if checkpoint is None else checkpoint.name
    print(
        common.markdown_table(
            ["reader", "questions", "Hit@1", "whole answer set", "s"],
            [[reader, n, f"{hits / n:.3f} ({hits})", f"{whole / n:.3f} ({whole})", f"{seconds:.1f}"]],
        )
    )
    for r in results:
        if not r["hit"]:
            print(f"miss: {r['question']} -> {r['answers']} (gold: {r['gold']} answers)")
    common.append_jsonl(
        out,
        {
            "bench": "wordings",
            "git_sha": common.git_sha(),
            **common.environment("cpu"),
            "reader": reader,
            "n": n,
            "hit_at_1": hits / n,
            "whole_set": whole / n,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
