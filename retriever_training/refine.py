"""``kgqa refine``: refined supervision without gold paths (ReG, 4.1), by an LLM or by the planner.

A question file that names no relation path trains on every shortest topic -> answer path, and
many of those reach an answer through relations the question never asks about (tags, years,
co-stars; docs/decisions.md). Refinement picks, per training question, the candidate relation
paths (:func:`~retriever_training.candidates.candidate_paths`) that answer it, and writes them as the
question's ``relation_paths``, so ``kgqa train`` labels the walks that follow them instead.

Two judges:

- ``llm``: ReG's prompt (:mod:`kgqa.reasoning.path_judge`) through any configured backend, every
  reply cached on disk.
- ``planner``: no LLM. Hard EM over the latent path: train the relation-path planner on all of
  each question's candidates (the softmax over its plans maximises their summed probability),
  keep for each question the candidates it rates within ``margin`` (in logits) of its best, and
  train again on what was kept, for ``rounds`` rounds. The planner generalises across questions:
  the relation path a phrasing asks for recurs over many questions, while the coincidental ones
  differ from question to question, so they lose. A neighbour prior (what the questions phrased
  most alike hold, :func:`neighbour_prior`) and a relation-name prior (the question's words
  against the path's relation names, :func:`text_prior`) join the planner's score, as a path
  prior does in hard EM over latent paths. Each round averages ``ensemble`` planners trained
  from different seeds: one planner's choices move with its seed by several points of
  precision (docs/decisions.md), so one judgement would say little.

Questions with one candidate keep it; questions with none keep nothing (they train on the
shortest-path fallback, as before).

Candidates may follow the permissive walk rule (walks pass back through and end at a topic,
:mod:`retriever_training.walk_rule`): "X's parent's child's parent" walks back through X when X
is an only child, and a "never back" pool would offer only the shortcut PARENTS there. A
question is judged under it where that adds a candidate, unless a quick judgement says the
kept paths would never need it (:func:`judged_examples`); the judge chooses, and ``kgqa train``
then decides the rule from the kept paths as it does from gold ones.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F
from tqdm import tqdm

from kgqa.config import REFINE_DEFAULTS, RefineSettings
from kgqa.embed.protocol import Embedder
from kgqa.errors import LLMUnavailableError
from kgqa.reasoning.path_judge import PathJudge, format_chain
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.plans import SENTENCE_VIEWS, Planner, question_plans, question_views
from kgqa.store import queries
from kgqa.store.protocol import GraphStore
from kgqa.types import QAExample
from retriever_training.candidates import CandidatePath, candidate_paths
from retriever_training.examples import TrainingExample
from retriever_training.train import TrainSettings, train_planner
from retriever_training.walk_rule import choose_walk_rule, under_walk_rule

Tables = tuple[EntityTable, RelationTable]
Judge = Literal["llm", "planner"]


@dataclass(frozen=True, slots=True)
class PlannerRefineSettings:
    """Hard-EM settings: rounds of planner training, the logit margin of what is kept, the folds
    of cross-fitting (1: the planner rates the questions it trained on), the weight of a
    candidate's answer fit in its score, the weight of the neighbour prior
    (:func:`neighbour_prior`; 0: none) and how many similar questions it reads, the weight (logits
    per unit of cosine) of the relation-name prior (:func:`text_prior`; 0: none), how many
    planners (seeds ``train.seed``, ``train.seed + 1``, ...) each round trains and averages, and
    the planner's optimisation (``train.epochs`` etc.)."""

    rounds: int = REFINE_DEFAULTS.rounds
    margin: float = REFINE_DEFAULTS.margin
    folds: int = REFINE_DEFAULTS.folds
    fit: float = 1.0
    prior: float = REFINE_DEFAULTS.prior
    neighbours: int = REFINE_DEFAULTS.neighbours
    text: float = REFINE_DEFAULTS.text
    ensemble: int = REFINE_DEFAULTS.ensemble
    # One question per planner step, every better epoch resetting patience: the judge's precision
    # was measured so (docs/decisions.md).
    train: TrainSettings = TrainSettings(
        epochs=REFINE_DEFAULTS.epochs,
        patience=3,
        seed=REFINE_DEFAULTS.seed,
        planner_batch=1,
        patience_past_noise=False,
    )

    @classmethod
    def from_config(cls, refine: RefineSettings) -> PlannerRefineSettings:
        """The settings of the config's ``[refine]`` section, as ``kgqa refine`` has trained the
        judge: its planners on the trainer's default batches and patience rule (unlike the
        measured library default above), ``refine.epochs`` and ``refine.seed``."""
        return cls(
            rounds=refine.rounds,
            margin=refine.margin,
            folds=refine.folds,
            prior=refine.prior,
            neighbours=refine.neighbours,
            text=refine.text,
            ensemble=refine.ensemble,
            train=TrainSettings(epochs=refine.epochs, patience=3, seed=refine.seed),
        )


@dataclass(slots=True)
class RefineReport:
    """What refinement did (also ``kgqa refine --json``).

    Attributes:
        questions: questions read; ``prepared``: those whose topic is in the store.
        candidates: candidate paths over all prepared questions; ``kept``: those kept.
        choice_questions: questions with two or more candidates (the ones a judge decides).
        kept_histogram: questions by number of kept paths (``"0"``, ``"1"``, ``"2"``, ``"3+"``).
        rounds: per planner round, the kept paths in total and the planner's validation gold mass.
        llm: judgements asked, read from the cache, and format failures (kept nothing).
        walk_rule: the walk rule ``kgqa train`` decides from the refined file
            (:meth:`~retriever_training.walk_rule.WalkRule.to_dict`).
    """

    judge: str
    out: str
    questions: int = 0
    prepared: int = 0
    candidates: int = 0
    kept: int = 0
    choice_questions: int = 0
    kept_histogram: dict[str, int] = field(default_factory=dict)
    rounds: list[dict[str, float]] = field(default_factory=list)
    llm: dict[str, int] = field(default_factory=dict)
    walk_rule: dict[str, float | int | bool] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def relation_source_names(store: GraphStore) -> dict[str, str]:
    """Relationship type -> the relation's name in the source triples (what ``relation_paths``
    holds; :func:`kgqa.names.relationship_type` maps it back)."""
    return {r["name"]: r["source_name"] or r["name"] for r in store.run(queries.get("relation_types_list"))}


def candidate_pools(
    examples: Sequence[TrainingExample], extra_steps: int | None = None
) -> list[list[CandidatePath]]:
    """Each example's candidate paths: walks of up to its subgraph's hops, at most ``extra_steps``
    longer than the shortest walk to the same answer (None: any walk of up to the hops), under
    its subgraph's walk rule (:func:`judged_examples` chooses it)."""
    return [
        candidate_paths(
            ex.prepared.subgraph,
            ex.answers,
            ex.prepared.hops,
            max(ex.prepared.hops - 1, 0) if extra_steps is None else extra_steps,
        )
        for ex in examples
    ]


def judged_examples(
    examples: Sequence[TrainingExample],
    tables: Tables,
    source_of: dict[str, str],
    extra_steps: int | None = None,
) -> tuple[list[TrainingExample], list[list[CandidatePath]]]:
    """``examples``, each under the walk rule it is judged under (module docstring), and their
    candidate pools under that rule (:func:`candidate_pools`).

    The rule is decided before judging, from a quick judgement (answer fit and neighbour prior,
    no planner: :func:`refine_with_planner` with ``rounds=0``) over pools that pass back through
    a topic where that adds a candidate: when the paths it keeps make ``kgqa train`` choose
    "never back" (:func:`~retriever_training.walk_rule.choose_walk_rule`), every question is
    judged under "never back"; otherwise the questions whose pools grow by walking back through
    a topic are judged under the permissive rule, the others under "never back". The quick
    judgement needs no LLM, so the LLM judge gets the same pools. Judging a split whose answers
    never come back under the permissive rule costs path precision (docs/decisions.md): the
    refining planner, trained over walks back through the topic too, rates the asked paths
    lower, and hub bounces (films sharing X's tag, back through X) enter the pools.
    """
    never = under_walk_rule(examples, topic_walks=False)
    back = under_walk_rule(examples, topic_walks=True)
    wide, narrow = candidate_pools(back, extra_steps), candidate_pools(never, extra_steps)
    grows = [{c.relations for c in w} != {c.relations for c in n} for w, n in zip(wide, narrow, strict=True)]
    if not any(grows):
        return never, narrow
    mixed = [b if g else n for n, b, g in zip(never, back, grows, strict=True)]
    pools = [w if g else n for n, w, g in zip(narrow, wide, grows, strict=True)]
    kept, _ = refine_with_planner(mixed, pools, tables, source_of, PlannerRefineSettings(rounds=0, text=0.0))
    refined = [with_paths(ex, pool, k, source_of) for ex, pool, k in zip(mixed, pools, kept, strict=True)]
    return (mixed, pools) if choose_walk_rule(refined).topic_walks else (never, narrow)


def neighbour_prior(
    examples: Sequence[TrainingExample],
    pools: Sequence[Sequence[CandidatePath]],
    neighbours: int,
    iterations: int = 3,
) -> list[torch.Tensor]:
    """Per example, the log prior of each candidate: how much of their belief the ``neighbours``
    questions phrased most alike put on the same relation path.

    Questions are compared by their text with the topic mention cut out (the planner's before /
    after views of :func:`~kgqa.retrieval.models.plans.question_views`, embedded once at preparation), so
    "films directed by X" and "films directed by Y" are neighbours whatever X and Y are. Belief
    starts uniform over each question's candidates and is propagated ``iterations`` times (each
    question's belief becomes its neighbours' mean belief, restricted to its own candidates), so
    questions with a single candidate, whose path is not in doubt, pull their neighbours towards
    it. A path the question asks for is a candidate of nearly every question phrased alike; a
    coincidence (a director who also wrote the film) of only some. A question is never its own
    neighbour (its belief reaches its prior only back through its neighbours').
    """
    vocabulary: dict[tuple[str, ...], int] = {}
    for pool in pools:
        for c in pool:
            vocabulary.setdefault(c.relations, len(vocabulary))
    n = len(examples)
    if n < 2 or not vocabulary:
        return [torch.zeros(len(pool)) for pool in pools]
    allowed = torch.zeros(n, len(vocabulary))
    for i, pool in enumerate(pools):
        for c in pool:
            allowed[i, vocabulary[c.relations]] = 1.0
    views = torch.stack(
        [
            torch.cat([F.normalize(v, dim=-1) for v in ex.prepared.question_views[1:SENTENCE_VIEWS]])
            for ex in examples
        ]
    )
    views = F.normalize(views, dim=-1)
    k = min(neighbours, n - 1)
    index, value = torch.empty(n, k, dtype=torch.long), torch.empty(n, k)
    for start in range(0, n, _SIMILARITY_ROWS):  # row blocks: n x n would not fit for 100k questions
        similarity = views[start : start + _SIMILARITY_ROWS] @ views.T
        rows = torch.arange(similarity.shape[0])
        similarity[rows, rows + start] = float("-inf")
        nearest = similarity.topk(k, dim=1)
        index[start : start + len(rows)], value[start : start + len(rows)] = nearest.indices, nearest.values
    value = value.clamp_min(0.0) + 1e-6
    rows = torch.arange(n).repeat_interleave(k)
    weights = torch.sparse_coo_tensor(
        torch.stack([rows, index.flatten()]),
        (value / value.sum(dim=1, keepdim=True)).flatten(),
        (n, n),
        check_invariants=True,
    )
    belief = allowed / allowed.sum(dim=1, keepdim=True).clamp_min(1.0)
    prior = torch.sparse.mm(weights, belief)
    for _ in range(iterations):
        belief = (prior + _PRIOR_FLOOR) * allowed
        belief = belief / belief.sum(dim=1, keepdim=True).clamp_min(_PRIOR_FLOOR)
        prior = torch.sparse.mm(weights, belief)
    return [
        (prior[i, [vocabulary[c.relations] for c in pool]] + _PRIOR_FLOOR).log() if pool else torch.zeros(0)
        for i, pool in enumerate(pools)
    ]


def verbalised_path(relations: Sequence[str], steps: Sequence[int], source_of: dict[str, str]) -> str:
    """A relation path as words, topic first: each relation's source name split on ``_``, ``.``,
    ``/`` and camelCase, lower-cased (``directed_by`` -> ``directed by``), and a step crossed from
    tail to head prefixed ``inverse`` (``X <-[directed_by]- film``: "inverse directed by")."""
    words = []
    for relation, signed in zip(relations, steps, strict=True):
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", source_of.get(relation, relation))
        words.append(("inverse " if signed % 2 else "") + re.sub(r"[_./]+", " ", name).strip().lower())
    return " ".join(words)


def text_prior(
    examples: Sequence[TrainingExample],
    pools: Sequence[Sequence[CandidatePath]],
    embedder: Embedder,
    names: dict[str, str],
    source_of: dict[str, str],
) -> list[torch.Tensor]:
    """Per example, the cosine of each candidate's :func:`verbalised_path` and the question with
    its topic mention cut out (the planner's before and after views joined, so the topic's name
    does not pull towards relations that happen to share its words).

    Any KG whose relation types have names gets it without training: when one person both
    directed and wrote a film, both paths reach the answer, and only the question's words
    ("directed", "written") tell them apart.
    """
    masked = []
    for ex in examples:
        topics = [names.get(t, t) for t in ex.example.topic_ids]
        views = question_views(ex.example.question, topics)[1:SENTENCE_VIEWS]
        masked.append(" ".join(v for v in dict.fromkeys(views) if v != "."))
    texts = sorted({verbalised_path(c.relations, c.steps, source_of) for pool in pools for c in pool})
    if not texts:
        return [torch.zeros(len(pool)) for pool in pools]
    row = {t: i for i, t in enumerate(texts)}
    paths, questions = embedder.embed(texts), embedder.embed([m or "." for m in masked])
    return [
        paths[[row[verbalised_path(c.relations, c.steps, source_of)] for c in pool]] @ questions[i]
        if pool
        else torch.zeros(0)
        for i, pool in enumerate(pools)
    ]


_PRIOR_FLOOR = 1e-3  # belief a path gets when no neighbour holds it: log 1e-3 is about -7 logits
_SIMILARITY_ROWS = 1024


def with_paths(
    ex: TrainingExample, candidates: Sequence[CandidatePath], kept: Sequence[int], source_of: dict[str, str]
) -> TrainingExample:
    """``ex`` whose question names the kept candidates as its relation paths (labels unchanged:
    only the planner, which reads the paths, trains on these)."""
    paths = tuple(tuple(source_of.get(r, r) for r in candidates[i].relations) for i in kept)
    return replace(ex, example=replace(ex.example, relation_paths=paths))


def _candidate_logits(
    planner: Planner, ex: TrainingExample, candidates: Sequence[CandidatePath], tables: Tables
) -> torch.Tensor:
    """Per candidate, the planner's best logit over the signed plans that follow its relations and
    end at an answer."""
    sub = ex.prepared.subgraph
    plans = question_plans(planner, ex.prepared)
    relation_emb = tables[1].matrix[ex.prepared.relation_rows]
    with torch.inference_mode():
        logits = planner.plan_logits(ex.prepared, relation_emb, plans.steps)
    at_answer = torch.zeros(plans.num_plans, dtype=torch.bool)
    at_answer[plans.end_plan[ex.answers[plans.end_entity]]] = True
    index = {c.relations: i for i, c in enumerate(candidates)}
    best = torch.full((len(candidates),), float("-inf"))
    for p, row in enumerate(plans.steps.tolist()):
        i = index.get(tuple(sub.relation_types[s // 2] for s in row if s >= 0))
        if i is not None and at_answer[p]:
            best[i] = max(best[i], logits[p])
    return best


def refine_with_planner(
    examples: Sequence[TrainingExample],
    pools: Sequence[Sequence[CandidatePath]],
    tables: Tables,
    source_of: dict[str, str],
    settings: PlannerRefineSettings,
    *,
    embedder: Embedder | None = None,
    progress: bool = False,
) -> tuple[list[list[int]], list[dict[str, float]]]:
    """Hard EM: per example, the indices of the candidates kept after ``settings.rounds`` rounds,
    and per round the kept total and the planner's validation metric.

    A candidate's score is the planner's logit plus ``fit`` times the log of its answer fit
    (:class:`~retriever_training.candidates.CandidatePath`): the path a question asks for reaches its
    answers and little else, a coincidence often only some of them and other entities too
    ("which films did X direct", where X also wrote a few of them and others); plus ``prior``
    times the log :func:`neighbour_prior`: what the questions phrased most alike hold; plus
    ``text`` times the :func:`text_prior` cosine (needs ``embedder``). The planner
    and the prior both generalise across questions, but the planner rates the questions it trained
    on, whose coincidences it learnt too, while the prior never reads a question's own candidates.
    With ``rounds=0`` no planner is trained: answer fit and prior alone decide (seconds, not
    minutes; less precise on compositional questions, docs/decisions.md). With ``ensemble`` > 1
    each round trains that many planners (seeds ``train.seed`` + 0, 1, ...) and their candidate
    logits are averaged: a single planner is deterministic for its input and seed, but which
    coincidences it keeps moves with the seed.

    Cross-fitting: with ``folds`` > 1 each question is rated by a planner trained on the other
    folds only. A planner rating the questions it trained on has learnt each one's own candidates,
    coincidences included; one that never saw the question rates candidates only by what other
    questions phrased alike taught it, which is the signal that separates the asked path.

    Early stopping validates on every fifth question with a single candidate, held out of
    training: there the label is not in doubt, while on the others any candidate counts as right
    in the first round, which would stop training after one epoch. Without such questions, every
    tenth question validates.

    Raises:
        ValueError: ``text`` > 0 and no ``embedder``.
    """
    untrained = [settings.fit * torch.tensor([c.fit for c in pool]).log() for pool in pools]
    if settings.prior > 0:
        prior = neighbour_prior(examples, pools, settings.neighbours)
        untrained = [u + settings.prior * p for u, p in zip(untrained, prior, strict=True)]
    if settings.text > 0:
        if embedder is None:
            raise ValueError("the relation-name prior (text > 0) needs the embedder")
        cosine = text_prior(examples, pools, embedder, tables[0].names, source_of)
        untrained = [u + settings.text * c for u, c in zip(untrained, cosine, strict=True)]
    kept = [list(range(len(pool))) for pool in pools]
    if settings.rounds == 0:
        kept = [_within_margin(u, settings.margin) if len(u) else [] for u in untrained]
    history: list[dict[str, float]] = []
    usable = [i for i, pool in enumerate(pools) if pool]
    single = [i for i in usable if len(pools[i]) == 1]
    held = set(single[4::5]) if len(single) >= 5 else {i for n, i in enumerate(usable) if n % 10 == 9}
    folds = max(1, settings.folds)
    order = torch.randperm(len(usable), generator=torch.Generator().manual_seed(settings.train.seed)).tolist()
    fold_of = {usable[k]: n % folds for n, k in enumerate(order)}  # shuffled: files are often sorted
    for _ in range(settings.rounds):
        labelled = {i: with_paths(examples[i], pools[i], kept[i], source_of) for i in usable}
        masses = []
        for fold in range(folds):
            rated = {i for i in usable if fold_of[i] == fold}
            fit_on = [i for i in usable if folds == 1 or i not in rated]
            val = [labelled[i] for i in fit_on if i in held]
            train = [labelled[i] for i in fit_on if i not in held]
            planners = []
            for member in range(max(1, settings.ensemble)):
                member_settings = replace(settings.train, seed=settings.train.seed + member)
                planner, trained = train_planner(
                    train, val or train, tables, member_settings, progress=progress, metric="gold_mass"
                )
                planners.append(planner)
                masses.append(max(trained.val_metric) if trained.val_metric else float("nan"))
            for i in sorted(rated):
                if len(pools[i]) < 2:
                    continue
                logits = [_candidate_logits(planner, examples[i], pools[i], tables) for planner in planners]
                scores = torch.stack(logits).mean(dim=0) + untrained[i]
                kept[i] = _within_margin(scores, settings.margin)
        history.append({"kept": float(sum(len(k) for k in kept)), "val_gold_mass": sum(masses) / len(masses)})
    return kept, history


def _within_margin(scores: torch.Tensor, margin: float) -> list[int]:
    """Indices of the scores within ``margin`` of the best."""
    return [c for c in range(len(scores)) if scores[c] >= scores.max() - margin]


def chain_text(
    ex: TrainingExample, candidate: CandidatePath, names: dict[str, str], source_of: dict[str, str]
) -> str:
    """The candidate's representative walk as ReG's directional chain of names."""
    sub = ex.prepared.subgraph
    entities = [names.get(sub.entity_ids[e], sub.entity_ids[e]) for e in candidate.walk]
    relations = [source_of.get(r, r) for r in candidate.relations]
    return format_chain(entities, relations, [s % 2 == 1 for s in candidate.steps])


def refine_with_llm(
    examples: Sequence[TrainingExample],
    pools: Sequence[Sequence[CandidatePath]],
    judge: PathJudge,
    names: dict[str, str],
    source_of: dict[str, str],
    *,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[list[list[int]], dict[str, int]]:
    """Per example, the indices of the candidates the LLM kept, and the counts for the report.

    Only questions with two or more candidates are asked.
    """
    asked = [i for i, pool in enumerate(pools) if len(pool) >= 2]
    items = [
        (examples[i].example.question, [chain_text(examples[i], c, names, source_of) for c in pools[i]])
        for i in asked
    ]
    judgements = judge.judge_all(items, on_progress=on_progress)
    kept = [list(range(len(pool))) for pool in pools]
    for i, judgement in zip(asked, judgements, strict=True):
        kept[i] = list(judgement.selected or ())
    counts = {
        "judged": len(asked),
        "from_cache": sum(j.cached for j in judgements),
        "format_failures": sum(j.selected is None for j in judgements),
        "none_selected": sum(j.selected == () for j in judgements),
    }
    return kept, counts


def refined_questions(
    questions: Sequence[QAExample],
    examples: Sequence[TrainingExample],
    pools: Sequence[Sequence[CandidatePath]],
    kept: Sequence[Sequence[int]],
    source_of: dict[str, str],
) -> list[QAExample]:
    """``questions`` with ``relation_paths`` set to their kept candidates (empty where nothing
    was kept or the question was not prepared)."""
    paths = {
        ex.example.qid: with_paths(ex, pool, k, source_of).example.relation_paths
        for ex, pool, k in zip(examples, pools, kept, strict=True)
    }
    return [replace(q, relation_paths=paths.get(q.qid, ())) for q in questions]


def summarise(
    report: RefineReport, pools: Sequence[Sequence[CandidatePath]], kept: Sequence[Sequence[int]]
) -> None:
    """Fill the candidate counts of ``report``."""
    report.prepared = len(pools)
    report.candidates = sum(len(p) for p in pools)
    report.kept = sum(len(k) for k in kept)
    report.choice_questions = sum(len(p) >= 2 for p in pools)
    histogram = {"0": 0, "1": 0, "2": 0, "3+": 0}
    for k in kept:
        histogram[str(len(k)) if len(k) < 3 else "3+"] += 1
    report.kept_histogram = histogram


def run_refine(
    settings: Any,
    path: Path,
    fmt: str,
    out: Path,
    *,
    judge: Judge,
    subgraph: Any,
    oracle_hops: bool,
    planner_settings: PlannerRefineSettings,
    extra_steps: int | None,
    cache_path: Path,
    limit: int | None,
    progress: bool,
) -> RefineReport:
    """Refine the relation paths of the questions in ``path`` and write them to ``out`` as RoG JSONL.

    Raises:
        LLMUnavailableError: ``judge="llm"`` and the backend is down; judgements made are cached.
    """
    from kgqa.embed import make_embedder
    from kgqa.eval.datasets import read_questions, sample, write_rog_jsonl
    from kgqa.store import open_store
    from kgqa.store.schema import check_query_embedder
    from kgqa.types import EmbeddingMeta
    from retriever_training.run import examples_by_hops

    report = RefineReport(judge=judge, out=str(out))
    questions = sample(list(read_questions(path, fmt)), limit, seed=planner_settings.train.seed)
    report.questions = len(questions)
    started = time.perf_counter()
    embedder = make_embedder(settings.embedder)
    with open_store(settings.store) as store:
        check_query_embedder(store, EmbeddingMeta(embedder.model_id, embedder.dimension))
        tables = (EntityTable(store, embedder.dimension), RelationTable(store))
        source_of = relation_source_names(store)
        examples = examples_by_hops(
            store,
            embedder,
            questions,
            tables,
            subgraph,
            oracle_hops=oracle_hops,
            progress=progress,
            desc="preparing",
            gold_paths=False,
        )
    examples, pools = judged_examples(examples, tables, source_of, extra_steps)
    report.seconds["prepare"] = time.perf_counter() - started
    started = time.perf_counter()
    if judge == "planner":
        kept, report.rounds = refine_with_planner(
            examples, pools, tables, source_of, planner_settings, embedder=embedder, progress=progress
        )
    else:
        from kgqa.reasoning.judgement_cache import JudgementCache
        from kgqa.reasoning.readers import make_llm_client

        cache = JudgementCache(cache_path)
        path_judge = PathJudge(make_llm_client(settings.reader), settings.reader, cache)
        choices = sum(len(p) >= 2 for p in pools)
        try:
            with tqdm(total=choices, desc="judging", disable=not progress, leave=False) as bar:
                kept, report.llm = refine_with_llm(
                    examples, pools, path_judge, tables[0].names, source_of, on_progress=bar.update
                )
        except LLMUnavailableError as exc:
            raise LLMUnavailableError(
                f"{exc} (refine stopped: {len(cache)} judgements cached in {cache_path})",
                hint="start the endpoint (reader.base_url) and re-run: cached judgements are not asked again",
            ) from exc
    report.seconds["judge"] = time.perf_counter() - started
    summarise(report, pools, kept)
    refined = [with_paths(ex, pool, k, source_of) for ex, pool, k in zip(examples, pools, kept, strict=True)]
    report.walk_rule = choose_walk_rule(refined).to_dict()
    write_rog_jsonl(out, refined_questions(questions, examples, pools, kept, source_of))
    return report
