"""``kgqa train``: read question files, split them, build examples, train the models, save.

Each file is split deterministically (hash of question id and seed) into a held-out test part,
a validation part and a training part; the checkpoint records the split so ``kgqa eval
--heldout`` and the benchmarks score only questions the models never saw.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from kgqa.checkpoint_file import save_checkpoint
from kgqa.config import Settings
from kgqa.device import resolve_device
from kgqa.embed import make_embedder
from kgqa.eval.datasets import read_questions, sample
from kgqa.eval.splits import SplitSettings, oracle_hop_count
from kgqa.pipeline import graph_made, subgraph_settings
from kgqa.reasoning.extractive import EntityReader
from kgqa.retrieval.features import PreparedQuestion, SubgraphSettings
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.name_match import NameMatchPlanner
from kgqa.retrieval.models.scorer import TripleScorer
from kgqa.retrieval.retriever import CHECKPOINT_FORMAT_VERSION, CHECKPOINT_KIND, load_bundle
from kgqa.store import open_store
from kgqa.store.schema import check_query_embedder
from kgqa.threads import resolve_threads, torch_threads
from kgqa.types import EmbeddingMeta, QAExample
from retriever_training.example_cache import cache_key, cached_examples, kb_fingerprint
from retriever_training.examples import TrainingExample, build_examples, no_examples_error
from retriever_training.planner_process import MIN_QUESTIONS, PlannerProcess
from retriever_training.train import (
    History,
    TrainSettings,
    example_plans,
    path_contexts,
    planner_task,
    train_path_scorer,
    train_planner,
    train_reader,
    train_scorer,
)
from retriever_training.walk_rule import choose_walk_rule, under_walk_rule


@dataclass(slots=True)
class TrainReport:
    """What ``kgqa train`` did (also its JSON output)."""

    out: str
    questions: dict[str, int] = field(default_factory=dict)
    examples: dict[str, int] = field(default_factory=dict)
    scorer_history: dict[str, Any] = field(default_factory=dict)
    path_scorer_history: dict[str, Any] = field(default_factory=dict)
    planner_history: dict[str, Any] = field(default_factory=dict)
    reader_history: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    example_cache: dict[str, str] = field(default_factory=dict)  # part -> "hit" | "written"
    walk_rule: dict[str, Any] = field(default_factory=dict)  # WalkRule.to_dict()
    # What answers: "extractive" (the trained reader) or "plan ends" (none trained: no labelled
    # questions, or fewer than train.reader_min_questions).
    reader: str = ""
    # With labelled and graph-made questions: whether the graph's trained a scorer candidate
    # ("used": not beside a planner's fewer than train.reader_min_questions labels), whether the
    # scorers trained on both were kept, and each candidate's reader validation (metric and loss
    # at its best epoch), by candidate name.
    graph_questions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def examples_by_hops(
    store: Any,
    embedder: Any,
    questions: list[QAExample],
    tables: tuple[EntityTable, RelationTable],
    subgraph: SubgraphSettings,
    *,
    oracle_hops: bool,
    progress: bool,
    desc: str,
    with_tokens: bool = False,
    gold_paths: bool = True,
    embed_threads: int | None = None,
) -> list[TrainingExample]:
    """Prepared examples of ``questions``, each extracted ``subgraph.hops`` far, or at the hop count
    its file gives with ``oracle_hops`` (an ablation: :func:`~kgqa.eval.splits.oracle_hop_count`); one
    progress bar, ``desc``; shared by training, refinement and the refine bench. ``embed_threads``:
    as :func:`~retriever_training.examples.build_examples`."""
    groups: dict[int, list[QAExample]] = {}
    for q in questions:
        groups.setdefault(oracle_hop_count(q, subgraph.hops) if oracle_hops else subgraph.hops, []).append(q)
    examples: list[TrainingExample] = []
    with tqdm(total=len(questions), desc=desc, disable=not progress, leave=False) as bar:
        for hops, group in sorted(groups.items()):
            settings = SubgraphSettings(**{**asdict(subgraph), "hops": hops})
            examples += build_examples(
                store,
                embedder,
                group,
                tables,
                settings,
                on_progress=bar.update,
                with_tokens=with_tokens,
                gold_paths=gold_paths,
                embed_threads=embed_threads,
            )
    return examples


#: Validation questions per file as a share of ``--limit``: early stopping and the reader's answer
#: threshold need a few hundred per file, and validating on as many as train cost a quarter of
#: the default recipe's time.
VAL_SHARE = 1 / 3


def part_limit(part: str, limit: int | None) -> int | None:
    """Questions per file of ``part`` ("train" or "val") under ``--limit`` (all without one)."""
    if limit is None or part == "train":
        return limit
    return max(1, round(limit * VAL_SHARE))


def run_training(
    settings: Settings,
    sources: Sequence[tuple[Path, str]],
    out: Path,
    *,
    subgraph: SubgraphSettings,
    oracle_hops: bool,
    split: SplitSettings,
    train_settings: TrainSettings,
    limit: int | None,
    progress: bool,
    cache_dir: Path | None = None,
    reuse_scorers: Path | None = None,
    gold_paths: bool = True,
) -> TrainReport:
    """Train the triple scorer and the extractive reader on ``sources`` and write ``out``.

    The walk rule (:mod:`retriever_training.walk_rule`) is chosen from the training part before
    any model trains, and stored with the subgraph caps.

    Questions of a file ``--from-graph`` made (:func:`~kgqa.pipeline.graph_made`) train the
    triple scorers only; the planner and the reader train on the labelled questions, and with
    none the checkpoint keeps the name match for plans and answers. Where no reader is trained
    beside labels (:func:`_plan_ends_answer`) they are not prepared at all.

    The models train on ``settings.runtime.device`` (``auto``: CUDA where present), the
    examples being prepared on the CPU and moved there one batch at a time.

    The planner trains in a second process while the scorers train here, where the thread
    budget allows (:func:`_planner_beside`); the reader, which reads all three, trains last.

    With ``cache_dir`` the prepared examples of each part are read from there when the same
    questions, KB and settings prepared them before, and stored there otherwise
    (:mod:`retriever_training.example_cache`). ``gold_paths=False`` ignores the relation paths the
    files name (``kgqa train --no-gold-paths``); it changes the labels, so it is part of the key.

    ``reuse_scorers``: a checkpoint of ``kgqa train`` on the same store whose triple scorer and
    second-pass scorer are taken as they are, so only the planner and the reader train (the
    scorers are the slow part; comparing planners or reader recipes need not retrain them).
    """
    report = TrainReport(out=str(out))
    train_settings = replace(train_settings, device=str(resolve_device(settings.runtime.device)))
    parts: dict[str, list[QAExample]] = {"train": [], "val": [], "heldout": []}
    made: set[QAExample] = set()  # the questions of files --from-graph made
    for path, fmt in sources:
        # --limit samples the labelled files; the graph's questions are as many as were asked for.
        per_file = None if graph_made(path) else limit
        for name, items in split.parts(list(read_questions(path, fmt))).items():
            kept = items if name == "heldout" else sample(items, part_limit(name, per_file), seed=split.seed)
            parts[name] += kept
            if graph_made(path):
                made.update(kept)
    report.questions = {k: len(v) for k, v in parts.items()}
    # Bulk work (embedding the questions, the reader's batches) runs on the whole thread budget
    # while nothing else trains beside it; the rest on this process's question threads.
    budget = resolve_threads(settings.runtime.threads)
    embedder = make_embedder(settings.embedder)
    # Read before the long preparation, so a bad file is refused at once.
    reused = load_bundle(reuse_scorers, embedder.model_id) if reuse_scorers is not None else None
    started = time.perf_counter()
    with open_store(settings.store) as store:
        check_query_embedder(store, EmbeddingMeta(embedder.model_id, embedder.dimension))
        tables = (EntityTable(store, embedder.dimension), RelationTable(store))
        # The word-order planner reads token states; only build them when it may be trained.
        with_tokens = train_settings.planner and train_settings.planner_kind != "mlp"
        kb = kb_fingerprint(store) if cache_dir else {}
        # Everything besides the questions, the KB and the embedder that changes the examples.
        # Examples are prepared under the caller's rule ("never back" from the CLI) and put under
        # the learned one after (under_walk_rule), so the cache holds the examples as prepared.
        example_settings = {
            "subgraph": asdict(subgraph),
            "oracle_hops": oracle_hops,
            "with_tokens": with_tokens,
            **({"gold_paths": False} if not gold_paths else {}),  # keys of earlier caches stay valid
        }

        def prepare(part: str, name: str, questions: list[QAExample]) -> list[TrainingExample]:
            def build() -> list[TrainingExample]:
                return examples_by_hops(
                    store,
                    embedder,
                    questions,
                    tables,
                    subgraph,
                    oracle_hops=oracle_hops,
                    progress=progress,
                    desc=f"preparing {name}",
                    with_tokens=with_tokens,
                    gold_paths=gold_paths,
                    embed_threads=budget,
                )

            if not questions or cache_dir is None:
                return build() if questions else []
            key = cache_key(kb, settings.embedder, questions, example_settings)
            examples, hit = cached_examples(cache_dir / f"{part}-{key}.pt", tables, build)
            report.example_cache[name] = "hit" if hit else "written"
            return examples

        # Labelled questions and graph-made ones are prepared (and cached) apart: the embedder's
        # batches would otherwise make each depend slightly on the other, so the labelled examples
        # are the very ones of a run without --from-graph, and the graph's serve every label count.
        prepared = {p: prepare(p, p, [q for q in parts[p] if q not in made]) for p in ("train", "val")}
        labelled_count = len(prepared["train"])
        # Beside labels a reader weighs the graph's scorers against theirs; without one, the
        # labels' are kept, so the graph's questions would be prepared and trained for nothing.
        graph_used = not labelled_count or not _plan_ends_answer(labelled_count, train_settings)
        for part in ("train", "val"):
            made_part = [q for q in parts[part] if q in made] if graph_used else []
            prepared[f"{part}_from_graph"] = prepare(part, f"{part}_from_graph", made_part)
        if made and not graph_used:
            report.graph_questions = {"kept": False, "used": False}
    if not prepared["train"] + prepared["train_from_graph"]:
        raise no_examples_error(parts["train"], part="training")
    walk_rule = choose_walk_rule(prepared["train"] + prepared["train_from_graph"])
    report.walk_rule = walk_rule.to_dict()
    subgraph = replace(subgraph, topic_walks=walk_rule.topic_walks)
    ruled = {name: under_walk_rule(examples, walk_rule.topic_walks) for name, examples in prepared.items()}
    # Questions made from the graph teach the triple scorers the graph's structure, but the planner
    # and the reader would learn their generated wording, which carries to people's questions worse
    # than the untrained name match does and drowns a few labelled ones (docs/decisions.md): those
    # two learn from the labelled questions alone, and with none keep the name match.
    asked_train, asked_val = ruled["train"], ruled["val"]
    train, val = asked_train + ruled["train_from_graph"], asked_val + ruled["val_from_graph"]
    labelled = [q for q in parts["train"] if q not in made]
    if labelled and not asked_train:
        raise no_examples_error(labelled, part="labelled training")
    report.examples = {"train": len(train), "val": len(val)}
    report.examples |= {"labelled_train": len(asked_train), "labelled_val": len(asked_val)}
    report.seconds["prepare"] = time.perf_counter() - started
    graph_only = not asked_train
    learn_plans = train_settings.planner and not graph_only
    plans = example_plans([*asked_train, *asked_val], train_settings.planner_steps) if learn_plans else None
    with contextlib.ExitStack() as stack:
        planner_process = None
        if plans is not None and reused is None and _planner_beside(settings, len(asked_train)):
            task = planner_task(asked_train, asked_val, tables, train_settings, plans=plans)
            planner_process = stack.enter_context(PlannerProcess(task, torch.get_num_threads()))
        # Scorer candidates by name: one, or with graph-made questions beside labelled ones, those
        # trained on both and on the labels alone.
        candidates: dict[str, ScorerCandidate] = {}
        if reused is not None:
            reused_pair = _reused_scorers(reused, embedder.model_id, train_settings, report)
            candidates["reused"] = ScorerCandidate(*reused_pair, None, report)
        else:
            for name, (c_train, c_val) in _scorer_parts(train, val, asked_train, asked_val).items():
                c_report = TrainReport(out=report.out)
                trained = _train_scorers(c_train, c_val, tables, train_settings, c_report, progress)
                candidates[name] = ScorerCandidate(*trained, c_report)
        planner = None
        if planner_process is not None:
            started = time.perf_counter()
            planner, planner_history, report.seconds["planner"] = planner_process.result()
            report.seconds["planner_wait"] = time.perf_counter() - started
            report.planner_history = planner_history.to_dict()
        elif plans is not None:
            started = time.perf_counter()
            planner, planner_history = train_planner(
                asked_train, asked_val, tables, train_settings, progress=progress, plans=plans
            )
            report.seconds["planner"] = time.perf_counter() - started
            report.planner_history = planner_history.to_dict()
    reader = None
    readers: dict[str, tuple[EntityReader, History]] = {}
    plan_ends = _plan_ends_answer(len(asked_train), train_settings)
    report.reader = "plan ends" if plan_ends else "extractive"
    if not plan_ends:
        started = time.perf_counter()
        with torch_threads(budget):
            for name, candidate in candidates.items():
                readers[name] = train_reader(
                    asked_train,
                    asked_val,
                    candidate.scorer,
                    tables,
                    train_settings,
                    path_scorer=candidate.path_scorer,
                    planner=planner,
                    progress=progress,
                    contexts=candidate.contexts,
                    plans=plans,
                )
        report.seconds["reader"] = time.perf_counter() - started
    # Without a reader to validate them (graph-made questions alone, or few labels) the labels'
    # own scorers are kept where there are some, as on a validation tie.
    chosen = _kept_candidate(readers) if readers else min(candidates, key=lambda name: name != LABELLED)
    scorer, path_scorer = candidates[chosen].scorer, candidates[chosen].path_scorer
    if candidates[chosen].report is not report:  # trained here: the histories and seconds into report
        report.scorer_history = candidates[chosen].report.scorer_history
        report.path_scorer_history = candidates[chosen].report.path_scorer_history
        for name, candidate in candidates.items():
            for stage, seconds in candidate.report.seconds.items():
                report.seconds[stage if name == chosen else f"{stage}_{name}"] = seconds
    if readers:
        reader, reader_history = readers[chosen]
        report.reader_history = reader_history.to_dict()
    if len(candidates) > 1:
        report.graph_questions = {
            "used": True,
            "kept": chosen == WITH_GRAPH,
            "reader_val": {name: _best_validation(history) for name, (_, history) in readers.items()},
        }
    model_id = embedder.model_id
    planner_entry = NameMatchPlanner().checkpoint() if graph_only else None
    if planner is not None:
        planner_entry = planner.checkpoint(embedder_model_id=model_id)
    save_checkpoint(
        {
            "format_version": CHECKPOINT_FORMAT_VERSION,
            "kind": CHECKPOINT_KIND,
            "embedder_model_id": model_id,
            "scorer": scorer.checkpoint(embedder_model_id=model_id),
            "path_scorer": path_scorer.checkpoint(embedder_model_id=model_id) if path_scorer else None,
            "planner": planner_entry,
            "reader": reader.checkpoint(embedder_model_id=model_id) if reader else None,
            "subgraph": asdict(subgraph),
            "oracle_hops": oracle_hops,
            "gold_paths": gold_paths,
            "split": asdict(split),
            "train_settings": asdict(train_settings),
            "sources": [[str(p), f] for p, f in sources],
            "report": report.to_dict(),
        },
        out,
    )
    return report


def train_configured(
    settings: Settings, sources: Sequence[tuple[Path, str]], *, limit: int | None, progress: bool
) -> TrainReport:
    """:func:`run_training` of ``sources`` with everything else read from ``settings`` (the
    ``[train]`` and ``[questions]`` sections, the subgraph caps, the checkpoint path, the example
    cache): what ``kgqa train`` and :func:`kgqa.train` both run."""
    t = settings.train
    return run_training(
        settings,
        sources,
        settings.checkpoint_path,
        subgraph=subgraph_settings(settings),
        oracle_hops=settings.questions.oracle_hops,
        split=SplitSettings.from_config(t),
        train_settings=TrainSettings.from_config(t),
        limit=limit,
        progress=progress,
        gold_paths=settings.questions.gold_paths,
        cache_dir=settings.example_cache_dir,
        reuse_scorers=t.reuse_scorers,
    )


#: The scorer candidates' names (:func:`_scorer_parts`).
WITH_GRAPH, LABELLED = "with_graph", "labelled"


@dataclass(frozen=True, slots=True)
class ScorerCandidate:
    """A triple scorer and second-pass scorer a checkpoint may keep (:func:`_scorer_parts`).

    Attributes:
        contexts: each example's prepared question with the first scorer's reach columns, by
            ``id(example)`` (:func:`~retriever_training.train.path_contexts`); None when reused.
        report: the report their training (or the reused checkpoint) filled with histories and
            seconds.
    """

    scorer: TripleScorer
    path_scorer: TripleScorer | None
    contexts: dict[int, PreparedQuestion] | None
    report: TrainReport


def _scorer_parts(
    train: list[TrainingExample],
    val: list[TrainingExample],
    asked_train: list[TrainingExample],
    asked_val: list[TrainingExample],
) -> dict[str, tuple[list[TrainingExample], list[TrainingExample]]]:
    """The (train, validation) examples of each scorer candidate: all of them; and, where
    graph-made questions join labelled ones, the labelled alone too. Why both: graph-made
    questions teach the scorers the graph's structure, yet on some graphs and label counts the
    reader trained on those scorers answers worse (docs/decisions.md, issue 27); the labelled
    validation questions decide (:func:`_kept_candidate`), so adding them is never worse there."""
    if not asked_train or len(train) == len(asked_train):
        return {WITH_GRAPH if not asked_train else LABELLED: (train, val)}
    return {WITH_GRAPH: (train, val), LABELLED: (asked_train, asked_val)}


def _plan_ends_answer(labelled_train: int, train_settings: TrainSettings) -> bool:
    """Whether the likeliest plan's ends answer (the train-free reading) and no reader is
    trained: with no labelled training examples, or beside a planner with fewer than
    ``reader_min_questions`` of them (a reader of so few reads worse than the plan's ends)."""
    few = train_settings.planner and labelled_train < train_settings.reader_min_questions
    return not labelled_train or few


def _best_validation(history: History) -> dict[str, float]:
    """A reader's validation metric and loss at its best epoch."""
    best = history.best_epoch - 1
    return {"metric": history.val_metric[best], "loss": history.val_loss[best]}


def _kept_candidate(readers: Mapping[str, tuple[EntityReader, History]]) -> str:
    """The candidate whose reader validates best on the labelled questions: the higher metric;
    on a tie the labels alone (graph-made questions must earn their place: a few dozen
    validation questions often tie, and the loss then chose the graph's scorers for WebQSP's
    530 labels, which held out 0.707 against the labels' 0.713)."""
    return max(readers, key=lambda name: (_best_validation(readers[name][1])["metric"], name == LABELLED))


def _planner_beside(settings: Settings, train_questions: int) -> bool:
    """Whether the planner trains in a second process beside the scorers
    (:mod:`retriever_training.planner_process`): when the thread budget holds two of this
    process's training pools and the training part is large enough to pay for the start."""
    budget = resolve_threads(settings.runtime.threads)
    return budget >= 2 * torch.get_num_threads() and train_questions >= MIN_QUESTIONS


def _reused_scorers(
    reused: dict[str, Any], model_id: str, train_settings: TrainSettings, report: TrainReport
) -> tuple[TripleScorer, TripleScorer | None]:
    """The triple scorer and (where asked and stored) second-pass scorer of the checkpoint
    ``reused`` (``--reuse-scorers``, read by :func:`load_bundle`); their histories into ``report``."""
    scorer = TripleScorer.from_checkpoint(reused["scorer"], embedder_model_id=model_id)
    path_scorer = None
    if train_settings.path_scorer and reused.get("path_scorer") is not None:
        path_scorer = TripleScorer.from_checkpoint(reused["path_scorer"], embedder_model_id=model_id)
    stored = reused.get("report", {})
    report.scorer_history = stored.get("scorer_history", {})
    report.path_scorer_history = stored.get("path_scorer_history", {}) if path_scorer else {}
    return scorer, path_scorer


def _train_scorers(
    train: list[TrainingExample],
    val: list[TrainingExample],
    tables: tuple[EntityTable, RelationTable],
    train_settings: TrainSettings,
    report: TrainReport,
    progress: bool,
) -> tuple[TripleScorer, TripleScorer | None, dict[int, PreparedQuestion] | None]:
    """Train the triple scorer and, where asked, the second-pass scorer; histories into ``report``.
    Also returns the first pass's :func:`~retriever_training.train.path_contexts` the second
    pass trained on (None without it), which the reader's triple scores reuse."""
    started = time.perf_counter()
    scorer, scorer_history = train_scorer(train, val, tables, train_settings, progress=progress)
    report.seconds["scorer"] = time.perf_counter() - started
    report.scorer_history = scorer_history.to_dict()
    path_scorer, contexts = None, None
    if train_settings.path_scorer:
        started = time.perf_counter()
        contexts = path_contexts([*train, *val], tables, scorer)
        path_scorer, path_history = train_path_scorer(
            train, val, scorer, tables, train_settings, progress=progress, contexts=contexts
        )
        report.seconds["path_scorer"] = time.perf_counter() - started
        report.path_scorer_history = path_history.to_dict()
    return scorer, path_scorer, contexts
