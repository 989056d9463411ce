"""Refined supervision (``kgqa refine``) against raw shortest paths and gold paths, one table.

For each split (MetaQA 1/2/3-hop, PQ-3H) it prepares a sample of training, validation and
held-out questions once, then trains scorer, planner and extractive reader on four labellings of
the same training questions and scores the held-out ones:

- (a) ``raw``: no relation paths, every shortest topic -> answer path (``--no-gold-paths``);
- (b) ``planner``: the paths the planner judge kept (hard EM with the neighbour and
  relation-name priors, ``--ensemble`` planners per round, no LLM);
- (c) ``llm``: the paths the LLM judge kept, only with ``--llm-base-url`` (an OpenAI-compatible
  endpoint) or ``--llm-backend transformers``;
- (d) ``gold``: the relation paths the file names.

Held-out Hit@1 is the extractive reader's top entity; answer recall@100 counts the answers among
the entities of the 100 best triples (plan-guided scores, as ``kgqa ask`` ranks them). The path
columns compare each judge's kept relation paths with the gold ones over the training and
validation questions: precision = kept and gold / kept, recall = kept and gold / gold paths
that are candidates at all; ``pool`` is the share of questions whose candidates include a gold
path, the ceiling of any judge. The judges choose among walks of up to the question's hops
(``--extra-steps``); raw labels are every shortest walk, so their row counts the shortest pool.
The judges' candidates may pass back through the topic where that adds a candidate and a quick
judgement needs it (``kgqa refine``'s pool, :func:`~retriever_training.refine.judged_examples`);
each labelling then trains under the walk rule it implies
(:func:`~retriever_training.walk_rule.choose_walk_rule`, as ``kgqa train`` decides it; column
``walks``). The path columns count only questions whose
gold path has a walk to an answer in the subgraph under the rule the question is judged under
(``gold walkable``). ``gap closed`` is the share of the (a) -> (d) Hit@1 gap a judge closes.

``--shared-scorer`` trains the triple scorer once per split on the raw labels and retrains only
planner and reader per labelling (cheaper; the planner is where the labels matter most).

    python -m bench.refine --train 150 --heldout 100 --epochs 5           # minutes on a CPU
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import torch

from bench.common import REPO, SHARED_DATA, append_jsonl, environment, markdown_table, out_option

METAQA_STORE = Path("kgqa-data")
SPLITS = {
    **{
        f"MetaQA-{h}H": (SHARED_DATA / "metaqa" / f"{h}-hop" / "qa_dev.txt", "metaqa", "metaqa")
        for h in (1, 2, 3)
    },
    "PQ-3H": (SHARED_DATA / "pathquestion" / "PQ-3H.train.txt", "pathquestion", "pq3"),
}


def _relabel(examples: Sequence[Any], paths: Sequence[tuple[tuple[str, ...], ...]]) -> list[Any]:
    from kgqa.retrieval.labels import weak_labels

    out = []
    for ex, p in zip(examples, paths, strict=True):
        qa = replace(ex.example, relation_paths=p)
        out.append(replace(ex, example=qa, labels=weak_labels(ex.prepared.subgraph, qa)))
    return out


def _path_quality(
    pools: Sequence[Any], kept: Sequence[Sequence[int]], gold: Sequence[set[tuple[str, ...]] | None]
) -> dict[str, float]:
    """Kept paths against gold over the questions whose gold path has a walk to an answer (``gold``
    None elsewhere: there gold training falls back to shortest paths too)."""
    hit = chosen = reachable = covered = questions = 0
    for pool, k, g in zip(pools, kept, gold, strict=True):
        if g is None:
            continue
        questions += 1
        relations = [pool[i].relations for i in k]
        candidates = {c.relations for c in pool}
        hit += sum(r in g for r in relations)
        chosen += len(relations)
        reachable += len(g & candidates)
        covered += bool(g & candidates)
    return {
        "precision": hit / chosen if chosen else float("nan"),
        "recall": hit / reachable if reachable else float("nan"),
        "pool": covered / questions if questions else float("nan"),
        "paths_per_question": chosen / questions if questions else float("nan"),
        "gold_walkable": questions,
    }


def _train_and_score(
    train: list[Any], val: list[Any], heldout: list[Any], tables: Any, settings: Any, scorer: Any
) -> dict[str, float]:
    from kgqa.eval.run import entities_in_top_triples
    from kgqa.retrieval.features import to_batch
    from kgqa.retrieval.models.path_context import triple_probabilities
    from kgqa.retrieval.models.plans import plan_guided_scores, rank_plans
    from retriever_training.train import train_planner, train_reader, train_scorer

    if scorer is None:
        scorer, _ = train_scorer(train, val, tables, settings, progress=False)
    planner, _ = train_planner(train, val, tables, settings, progress=False)
    reader, _ = train_reader(train, val, scorer, tables, settings, planner=planner, progress=False)
    hits, recalls = [], []
    with torch.inference_mode():
        for ex in heldout:
            if not ex.example.answers:
                continue
            sub = ex.prepared.subgraph
            probabilities = triple_probabilities(ex.prepared, tables, scorer)
            ranked = rank_plans(planner, ex.prepared, tables)
            scores = (
                plan_guided_scores(probabilities, ranked, sub) if ranked.plans.num_plans else probabilities
            )
            top = entities_in_top_triples(sub, torch.argsort(scores, descending=True), 100)
            gold = set(ex.example.answers)
            recalls.append(len(gold & top) / len(gold))
            logits = reader(
                to_batch(ex.prepared, tables), probabilities, sub.topic, ranked.reach(sub.num_entities)
            )
            logits[~sub.candidate_mask()] = float("-inf")
            hits.append(float(sub.entity_ids[int(torch.argmax(logits))] in gold))
    return {"hit@1": sum(hits) / len(hits), "recall@100": sum(recalls) / len(recalls), "n": len(hits)}


@click.command()
@click.option("--splits", default=",".join(SPLITS), show_default=True, help="Comma-separated splits.")
@click.option(
    "--train", "n_train", type=int, default=150, show_default=True, help="Training questions per split."
)
@click.option("--val", "n_val", type=int, default=40, show_default=True)
@click.option("--heldout", "n_heldout", type=int, default=100, show_default=True)
@click.option("--epochs", type=int, default=5, show_default=True)
@click.option("--rounds", type=int, default=2, show_default=True, help="Planner judge: hard-EM rounds.")
@click.option("--margin", type=float, default=0.5, show_default=True)
@click.option("--folds", type=int, default=1, show_default=True, help="Planner judge: cross-fitting folds.")
@click.option("--prior", type=float, default=1.0, show_default=True, help="Planner judge: neighbour prior.")
@click.option("--neighbours", type=int, default=10, show_default=True)
@click.option("--text", type=float, default=20.0, show_default=True, help="Planner judge: name prior.")
@click.option("--ensemble", type=int, default=3, show_default=True, help="Planner judge: planners per round.")
@click.option(
    "--extra-steps",
    type=int,
    help="Judges' candidates: walks at most this many steps longer than the shortest "
    "(default: any walk of up to the question's hops).",
)
@click.option("--shared-scorer/--own-scorer", default=False, show_default=True)
@click.option(
    "--metaqa-store",
    type=click.Path(file_okay=False, path_type=Path),
    default=METAQA_STORE,
    show_default=True,
    help="A store of the full MetaQA KB (kgqa ingest kb.txt.gz --format metaqa --data-dir DIR).",
)
@click.option(
    "--pq-store",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kgqa-data-pq3"),
    show_default=True,
    help="A store of PathQuestion's 3H-kb.txt (kgqa ingest 3H-kb.txt --format tsv --data-dir DIR).",
)
@click.option("--llm-backend", type=click.Choice(["openai", "transformers", "vllm"]), help="Enables (c).")
@click.option("--llm-base-url", help="OpenAI-compatible endpoint for (c) (with --llm-model).")
@click.option("--llm-model")
@click.option(
    "--llm-cache",
    type=click.Path(dir_okay=False, path_type=Path),
    default=REPO / "bench" / "results" / "refine-judgements.jsonl",
)
@out_option("refine")
def main(
    splits: str,
    n_train: int,
    n_val: int,
    n_heldout: int,
    epochs: int,
    rounds: int,
    margin: float,
    folds: int,
    prior: float,
    neighbours: int,
    text: float,
    ensemble: int,
    extra_steps: int | None,
    shared_scorer: bool,
    metaqa_store: Path,
    pq_store: Path,
    llm_backend: str | None,
    llm_base_url: str | None,
    llm_model: str | None,
    llm_cache: Path,
    out: Path,
) -> None:
    """Held-out Hit@1 and answer recall@100 from raw, planner-refined, LLM-refined and gold labels."""
    from kgqa.config import load_config
    from kgqa.embed import make_embedder
    from kgqa.eval.datasets import read_questions, sample
    from kgqa.eval.splits import SplitSettings
    from kgqa.names import relationship_type
    from kgqa.pipeline import subgraph_settings
    from kgqa.retrieval.graph.tables import EntityTable, RelationTable
    from kgqa.retrieval.labels import relation_path_labels
    from kgqa.store import open_store
    from retriever_training.refine import (
        PlannerRefineSettings,
        candidate_pools,
        judged_examples,
        refine_with_llm,
        refine_with_planner,
        relation_source_names,
        with_paths,
    )
    from retriever_training.run import examples_by_hops
    from retriever_training.train import TrainSettings
    from retriever_training.walk_rule import choose_walk_rule, under_walk_rule

    torch.set_num_threads(1)
    settings = TrainSettings(epochs=epochs, patience=3, path_scorer=False)
    use_llm = llm_backend is not None or llm_base_url is not None
    rows, record = [], {"bench": "refine", **environment("cpu"), "train": n_train, "heldout": n_heldout}
    for name in splits.split(","):
        path, fmt, store_kind = SPLITS[name]
        data_dir = metaqa_store if store_kind == "metaqa" else pq_store
        if not path.exists() or not data_dir.exists():
            raise click.ClickException(f"{name}: {path} or store {data_dir} is missing")
        reader_overrides = {"backend": llm_backend or "openai", "model": llm_model}
        if llm_base_url:
            reader_overrides["base_url"] = llm_base_url
        config = load_config(
            {"store": {"data_dir": str(data_dir)}, "embedder": {"device": "cpu"}, "reader": reader_overrides},
            environ={},
        ).settings
        started = time.perf_counter()
        parts = SplitSettings(0.2, 0.1, 0).parts(list(read_questions(path, fmt)))
        chosen = {
            "train": sample(parts["train"], n_train, seed=0),
            "val": sample(parts["val"], n_val, seed=0),
            "heldout": sample(parts["heldout"], n_heldout, seed=0),
        }
        embedder = make_embedder(config.embedder)
        with open_store(config.store) as store:
            tables = (EntityTable(store, embedder.dimension), RelationTable(store))
            source_of = relation_source_names(store)
            prepared = {
                k: examples_by_hops(
                    store,
                    embedder,
                    v,
                    tables,
                    subgraph_settings(config),
                    oracle_hops=False,
                    progress=False,
                    desc=k,
                )
                for k, v in chosen.items()
            }
        learn = prepared["train"] + prepared["val"]
        judged, pools = judged_examples(learn, tables, source_of, extra_steps)
        shortest = candidate_pools(learn, 0)
        gold = [
            {tuple(relationship_type(r) for r in p) for p in ex.example.relation_paths}
            if relation_path_labels(ex.prepared.subgraph, ex.example.answers, ex.example.relation_paths).any()
            else None
            for ex in judged
        ]
        seconds = {"prepare": time.perf_counter() - started}
        kept_by = {"raw": [list(range(len(p))) for p in shortest]}
        started = time.perf_counter()
        kept_by["planner"], _ = refine_with_planner(
            judged,
            pools,
            tables,
            source_of,
            PlannerRefineSettings(
                rounds=rounds,
                margin=margin,
                folds=folds,
                prior=prior,
                neighbours=neighbours,
                text=text,
                ensemble=ensemble,
                train=settings,
            ),
            embedder=embedder,
        )
        seconds["planner_judge"] = time.perf_counter() - started
        if use_llm:
            from kgqa.reasoning.judgement_cache import JudgementCache
            from kgqa.reasoning.path_judge import PathJudge
            from kgqa.reasoning.readers import make_llm_client

            started = time.perf_counter()
            judge = PathJudge(make_llm_client(config.reader), config.reader, JudgementCache(llm_cache))
            kept_by["llm"], _ = refine_with_llm(judged, pools, judge, tables[0].names, source_of)
            seconds["llm_judge"] = time.perf_counter() - started
        labellings: dict[str, list[tuple[tuple[str, ...], ...]]] = {
            "raw": [() for _ in learn],
            **{
                judge_name: [
                    with_paths(ex, pool, k, source_of).example.relation_paths
                    for ex, pool, k in zip(learn, pools, kept, strict=True)
                ]
                for judge_name, kept in kept_by.items()
                if judge_name != "raw"
            },
            "gold": [ex.example.relation_paths for ex in learn],
        }
        n = len(prepared["train"])
        scorer = None
        if shared_scorer:
            from retriever_training.train import train_scorer

            raw = _relabel(learn, labellings["raw"])
            scorer, _ = train_scorer(raw[:n], raw[n:], tables, settings, progress=False)
        results = {}
        for label, paths in labellings.items():
            started = time.perf_counter()
            relabelled = _relabel(learn, paths)
            rule = choose_walk_rule(relabelled[:n])
            train, val, heldout = (
                under_walk_rule(part, rule.topic_walks)
                for part in (relabelled[:n], relabelled[n:], prepared["heldout"])
            )
            results[label] = _train_and_score(train, val, heldout, tables, settings, scorer)
            results[label]["topic_walks"] = rule.topic_walks
            results[label].update(
                _path_quality(shortest if label == "raw" else pools, kept_by[label], gold)
                if label in kept_by
                else {}
            )
            seconds[f"train_{label}"] = time.perf_counter() - started
        gap = results["gold"]["hit@1"] - results["raw"]["hit@1"]
        for label, r in results.items():
            closed = (r["hit@1"] - results["raw"]["hit@1"]) / gap if gap > 0 else float("nan")
            rows.append(
                [
                    name,
                    label,
                    r["n"],
                    f"{r['hit@1']:.3f}",
                    f"{r['recall@100']:.3f}",
                    ("(no gap)" if gap <= 0 else f"{closed:.2f}") if label in ("planner", "llm") else "",
                    f"{r['precision']:.3f}" if "precision" in r else "",
                    f"{r['recall']:.3f}" if "recall" in r else "",
                    f"{r['pool']:.3f}" if "pool" in r else "",
                    f"{r['paths_per_question']:.2f}" if "paths_per_question" in r else "",
                    r.get("gold_walkable", ""),
                    "back" if r["topic_walks"] else "never back",
                ]
            )
        click.echo("\n".join(" | ".join(str(c) for c in row) for row in rows[-len(results) :]), err=True)
        record[name] = {
            "results": results,
            "seconds": seconds,
            "questions": {k: len(v) for k, v in prepared.items()},
        }
        spent = ", ".join(f"{k} {v:.0f}s" for k, v in seconds.items())
        click.echo(f"{name}: done in {sum(seconds.values()):.0f}s ({spent})", err=True)
    click.echo(
        f"train {n_train} / val {n_val} / held-out {n_heldout} per split, epochs {epochs}, "
        f"rounds {rounds}, margin {margin}, folds {folds}, prior {prior} over {neighbours} neighbours, "
        f"text prior {text}, ensemble {ensemble}, "
        f"extra steps {'up to the hops' if extra_steps is None else extra_steps}, "
        f"scorer {'shared (raw labels)' if shared_scorer else 'per labelling'}"
    )
    click.echo(
        markdown_table(
            [
                "split",
                "labels",
                "n",
                "Hit@1",
                "ans R@100",
                "gap closed",
                "path P",
                "path R",
                "pool",
                "paths/q",
                "gold walkable",
                "walks",
            ],
            rows,
        )
    )
    append_jsonl(out, record)


if __name__ == "__main__":
    main()
