"""Question -> scored triples: the retrieval half of SubgraphRAG.

``Retriever`` links the question, pulls the candidate subgraph, encodes it (DDE), scores every
triple with the trained scorer (and its second pass, when the checkpoint has one), optionally
rates the relation paths the question may follow (:mod:`kgqa.retrieval.models.plans`, when the
checkpoint has a planner), ranks the triples (``rescoring``: lifting the walks of the likeliest
plans, by the scorer alone, or by each triple's best path from a topic). Every stage is timed.
The extractive reader that reads answers off a retrieval is :mod:`kgqa.reasoning.extractive`.
"""

from __future__ import annotations

import functools
import time
from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import torch

from kgqa.checkpoint_file import load_checkpoint
from kgqa.embed import known_words
from kgqa.embed.protocol import Embedder
from kgqa.errors import CheckpointError, ConfigError, KgqaError
from kgqa.link import link
from kgqa.linking_words import RelationWords
from kgqa.retrieval.disambiguation import Disambiguation, rank_topics
from kgqa.retrieval.evidence.nameless import nameless_names
from kgqa.retrieval.evidence.path_pooling import path_rescore
from kgqa.retrieval.features import PreparedQuestion, SubgraphSettings, WordRuns, prepare, subgraph_around
from kgqa.retrieval.graph.kinds import SchemaKinds, heads_of_types
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.retrieval.models.answer_type import answer_noun, entity_kind_fit, names_a_kind_of
from kgqa.retrieval.models.name_match import (
    NameMatchPlanner,
    WordVectors,
    question_runs,
    relation_name_words,
    relation_phrases,
)
from kgqa.retrieval.models.path_context import triple_probabilities_many
from kgqa.retrieval.models.plan_attention import AttentionPlanScorer
from kgqa.retrieval.models.plans import (
    Planner,
    RankedPlans,
    name_prior_for,
    plan_guided_scores,
    planner_from_checkpoint,
    question_views,
    rank_plans_many,
)
from kgqa.retrieval.models.scorer import TripleScorer
from kgqa.store.protocol import GraphStore
from kgqa.threads import batch_threads, map_on_threads
from kgqa.types import LinkedEntity, ParsedQuestion

#: ``kind`` and ``format_version`` of the checkpoint file ``kgqa train`` writes (:func:`load_bundle`).
CHECKPOINT_KIND = "kgqa_retriever"
CHECKPOINT_FORMAT_VERSION = 1
Rescoring = Literal["plan", "path", "none"]
#: Likeliest relation paths shown with a retrieval.
SHOWN_PLANS = 3
#: The kinds nearest a question's noun that the entities a subgraph did not expand are read from
#: the store for (:meth:`Retriever._kind_fit`): the answers' kind is among them when the graph has it.
KINDS_LOOKED_UP = 5


@dataclass(frozen=True, slots=True)
class ScoredTriple:
    """One retrieved triple with its score in [0, 1] (higher is better).

    ``head``/``tail`` are display names; ``key`` = (head id, relationship type, tail id) is what
    identifies the relationship across sessions and store copies (saved evidence), ``rel_eid``
    only within the session that read it.
    """

    head: str
    relation: str
    tail: str
    score: float
    rel_eid: str
    key: tuple[str, str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "relation": self.relation,
            "tail": self.tail,
            "score": round(self.score, 6),
            "rel_eid": self.rel_eid,
            "head_id": self.key[0],
            "tail_id": self.key[2],
        }


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Scored candidate triples of one question.

    Attributes:
        scores: FloatTensor [E] in [0, 1], aligned with ``prepared.subgraph``: what the triples are
            ranked by (plan-guided or path-rescored probabilities, or the probabilities themselves).
        probabilities: FloatTensor [E], the scorer's own triple probabilities (the extractive
            reader's input, as in training).
        timings_ms: milliseconds per stage (link, extract, dde, score; rescore and plan when on).
        plans: the planner's relation paths, ``None`` without a planner.
        disambiguation: how the first topic was chosen among close linking candidates, ``None``
            when the linker left no choice.
        named: BoolTensor [N], False for nameless entities (Freebase CVT nodes, named by their
            mid and nothing else; ``has_meaningful_text``); ``None``: all are named.
    """

    question: str
    topics: tuple[LinkedEntity, ...]
    prepared: PreparedQuestion
    scores: torch.Tensor
    probabilities: torch.Tensor
    names: Mapping[str, str]
    timings_ms: dict[str, float] = field(default_factory=dict)
    plans: RankedPlans | None = None
    disambiguation: Disambiguation | None = None
    named: torch.Tensor | None = None

    def answerable(self) -> torch.Tensor:
        """BoolTensor [N]: the entities an answer may be: ``Subgraph.candidate_mask`` less the
        nameless ones. A question's walks pass through a CVT node ("Obama -> education -> m.02nqgpk
        -> institution -> Harvard") but its answer is never the CVT itself."""
        allowed = self.prepared.subgraph.candidate_mask()
        return allowed if self.named is None else allowed & self.named

    def order(self) -> torch.Tensor:
        """LongTensor [E]: triple indices by descending score."""
        return torch.argsort(self.scores, descending=True, stable=True)

    def triple(self, i: int) -> ScoredTriple:
        h, r, t = self.prepared.subgraph.triple(i)
        return ScoredTriple(
            self.names.get(h, h),
            r,
            self.names.get(t, t),
            float(self.scores[i]),
            self.prepared.subgraph.rel_eids[i],
            (h, r, t),
        )

    def top(self, k: int) -> list[ScoredTriple]:
        return [self.triple(i) for i in self.order()[:k].tolist()]

    def to_dict(self, k: int = 100) -> dict[str, Any]:
        sub = self.prepared.subgraph
        out = {
            "question": self.question,
            "topics": [t.to_dict() for t in self.topics],
            "subgraph": {"entities": sub.num_entities, "triples": sub.num_triples},
            "triples": [t.to_dict() for t in self.top(k)],
            "timings_ms": {stage: round(ms, 3) for stage, ms in self.timings_ms.items()},
        }
        if self.plans is not None:
            out["plans"] = self.plans.describe(sub, SHOWN_PLANS)
        if self.disambiguation is not None:
            out["disambiguation"] = self.disambiguation.to_dict()
        return out


def load_bundle(path: Path, embedder_model_id: str) -> dict[str, Any]:
    """The checkpoint file ``kgqa train`` writes (scorers, planner, reader, subgraph caps), checked.

    Raises:
        CheckpointError: the file is missing, is not a retriever checkpoint, or was trained with
            another embedder.
    """
    data = load_checkpoint(path)
    if data.get("kind") != CHECKPOINT_KIND:
        raise CheckpointError(
            f"checkpoint {path} is not a kgqa retriever checkpoint", hint="use a file from 'kgqa train'"
        )
    if data["embedder_model_id"] != embedder_model_id:
        raise CheckpointError(
            f"{path} was trained with embedder '{data['embedder_model_id']}', not '{embedder_model_id}'",
            hint=f"set embedder.model = '{data['embedder_model_id']}'",
        )
    return data


def checkpoint_subgraph(data: dict[str, Any], override: SubgraphSettings | None = None) -> SubgraphSettings:
    """The subgraph settings a checkpoint (:func:`load_bundle`) answers with: its caps, or
    ``override``'s, and always its walk rule (``topic_walks``; "never back" for a checkpoint
    written before the rule was learned, which is how those were trained)."""
    stored = data["subgraph"]
    return replace(override or SubgraphSettings(**stored), topic_walks=bool(stored.get("topic_walks", False)))


def checkpoint_name_prior(data: dict[str, Any], setting: float | None = None) -> float:
    """The weight of the relation-name match beside a checkpoint's (:func:`load_bundle`) planner:
    ``setting`` where given, else :func:`name_prior_for` the labelled training questions its
    report counts (the default weight for a checkpoint that counts none)."""
    if setting is not None:
        return setting
    return name_prior_for(data.get("report", {}).get("examples", {}).get("labelled_train"))


def embed_distinct(embedder: Embedder, texts: Sequence[str]) -> torch.Tensor:
    """``embedder.embed(texts)``, each distinct text encoded once: a question's planner views
    repeat (``"."`` for an empty side, a walk-order mention that is the whole text before the
    topic), half of the six on a typical MetaQA question (4.7 -> 3.9 ms, one thread). Only at
    retrieval: training embeds its views as they were measured (a text's vector moves in the
    third decimal with the batch it is encoded in): the planner's training follows those third
    decimals (embedded once each, one recipe's held-out 2-hop plan Hit@1 went 0.980 -> 0.973)."""
    distinct = list(dict.fromkeys(texts))
    vectors = embedder.embed(distinct)
    if len(distinct) == len(texts):
        return vectors
    row = {text: i for i, text in enumerate(distinct)}
    return vectors[[row[text] for text in texts]]


class Retriever:
    """Link -> extract -> DDE -> score.

    Args:
        store: graph store holding the embedded KB.
        embedder: the store's embedding model (questions are embedded with it).
        scorer: trained triple scorer.
        path_scorer: second-pass scorer (:mod:`kgqa.retrieval.models.path_context`), optional.
        planner: relation-path planner (:mod:`kgqa.retrieval.models.plans`), optional; the extractive
            reader of a checkpoint with a planner needs it.
        subgraph: caps and DDE rounds.
        rescoring: ``plan`` ranks triples with :func:`plan_guided_scores` (by the scorer alone
            without a planner), ``path`` with :func:`path_rescore`, ``none`` by the scorer alone.
        name_prior: weight of the relation-name match added to a trained planner's plan logits
            (:func:`rank_plans`); 0 leaves the planner alone.
        answer_type: weight of the answers' kind a question names ("what country") against each
            plan's walk ends (:mod:`kgqa.retrieval.models.answer_type`), for any planner; 0: none.
        answer_kind: the same against the kinds the graph's schema gives the walk ends (the
            relations they head, named ``domain.type.property`` as in Freebase:
            :func:`~kgqa.retrieval.graph.kinds.head_kind`); 0: none.
        tail_kind: the same against the kinds plain relation names give the walk ends they point
            at (``plays_in_club``: clubs, :func:`~kgqa.retrieval.graph.kinds.tail_kind`), a plan
            only losing the mean over its ends of how much worse each fits than the best end
            (:func:`~kgqa.retrieval.models.answer_type.tail_kind_fit`); 0: none.
    """

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder | Callable[[], Embedder],
        scorer: TripleScorer | None,
        *,
        path_scorer: TripleScorer | None = None,
        planner: Planner | NameMatchPlanner | None = None,
        subgraph: SubgraphSettings | None = None,
        rescoring: Rescoring = "plan",
        name_prior: float = 0.0,
        answer_type: float = 0.0,
        answer_kind: float = 0.0,
        tail_kind: float = 0.0,
    ) -> None:
        self.store = store
        self.rescoring = rescoring
        self.name_prior = name_prior
        self.answer_type = answer_type
        self.answer_kind = answer_kind
        self.tail_kind = tail_kind
        self._embedder = embedder
        self.scorer = scorer.eval() if scorer is not None else None
        self.path_scorer = path_scorer.eval() if path_scorer is not None else None
        self.planner = planner.eval() if planner is not None else None
        self.subgraph = subgraph or SubgraphSettings()
        width = scorer.config.emb_dim if scorer is not None else self.embedder.dimension
        self.tables = (EntityTable(store, width), RelationTable(store))
        self._relation_words: RelationWords | None = None
        self._word_vectors: WordVectors | None = None  # made with the embedder, which loads lazily
        self._known_words: frozenset[str] = frozenset()  # the embedder's words: "screen" + "writer"
        self._relation_phrases = relation_phrases(self.tables[1].index)  # "place of birth" is one word
        self._relation_name_words = relation_name_words(self.tables[1].index)  # "screenwriter" -> "writer"

    @property
    def embedder(self) -> Embedder:
        if callable(self._embedder) and not hasattr(self._embedder, "embed"):
            self._embedder = self._embedder()
        return self._embedder  # type: ignore[return-value]

    @classmethod
    def from_checkpoint(
        cls,
        store: GraphStore,
        embedder: Embedder,
        path: Path,
        *,
        subgraph: SubgraphSettings | None = None,
        rescoring: Rescoring = "plan",
        name_prior: float | None = None,
        answer_type: float = 0.0,
        answer_kind: float = 0.0,
        tail_kind: float = 0.0,
        device: torch.device | str = "cpu",
    ) -> Retriever:
        """Load the scorers and planner written by ``kgqa train`` onto ``device`` (``subgraph``
        overrides its caps, not its walk rule: :func:`checkpoint_subgraph`). ``name_prior`` None:
        the weight for the number of labelled questions the planner learnt from
        (:func:`name_prior_for`)."""
        data = load_bundle(path, embedder.model_id)
        model_id = embedder.model_id
        scorer = TripleScorer.from_checkpoint(data["scorer"], embedder_model_id=model_id).to(device)
        path_scorer = planner = None
        if data.get("path_scorer") is not None:
            path_scorer = TripleScorer.from_checkpoint(data["path_scorer"], embedder_model_id=model_id).to(
                device
            )
        if data.get("planner") is not None:
            planner = planner_from_checkpoint(data["planner"], embedder_model_id=model_id)
            if not isinstance(planner, NameMatchPlanner):  # the name match has no weights to move
                planner = planner.to(device)
        subgraph = checkpoint_subgraph(data, subgraph)
        return cls(
            store,
            embedder,
            scorer,
            path_scorer=path_scorer,
            planner=planner,
            subgraph=subgraph,
            rescoring=rescoring,
            name_prior=checkpoint_name_prior(data, name_prior),
            answer_type=answer_type,
            answer_kind=answer_kind,
            tail_kind=tail_kind,
        )

    @classmethod
    def train_free(
        cls,
        store: GraphStore,
        embedder: Embedder,
        *,
        subgraph: SubgraphSettings | None = None,
        answer_type: float = 0.0,
        answer_kind: float = 0.0,
        tail_kind: float = 0.0,
    ) -> Retriever:
        """A retriever with nothing trained: plans ranked by their relation names' match with the
        question's words (:class:`~kgqa.retrieval.models.name_match.NameMatchPlanner`), triples by the
        likeliest plans' walks through them (walks come back through a topic only where the
        question chains relation nouns and a plan reaches nothing otherwise:
        ``Subgraph.topic_walks_if_needed``)."""
        return cls(
            store,
            embedder,
            None,
            planner=NameMatchPlanner(),
            subgraph=subgraph,
            answer_type=answer_type,
            answer_kind=answer_kind,
            tail_kind=tail_kind,
        )

    @property
    def trained(self) -> bool:
        """Whether a trained scorer ranks the triples (False on the train-free path)."""
        return self.scorer is not None

    @property
    def plans_by_name(self) -> bool:
        """Whether plans are ranked by the untrained name match (the train-free path, and a
        checkpoint trained on questions made from the graph alone): their ends are the answers
        (:class:`~kgqa.reasoning.plan_reader.PlanReader`)."""
        return isinstance(self.planner, NameMatchPlanner)

    @property
    def _trained_planner(self) -> bool:
        """Whether a trained planner (not the name match) rates the plans."""
        return self.planner is not None and not isinstance(self.planner, NameMatchPlanner)

    def retrieve(self, question: str, *, topic_ids: Sequence[str] = (), hops: int | None = None) -> Retrieval:
        """Score every candidate triple of ``question`` (topics linked unless given):
        :meth:`retrieve_many` of this one question.

        Raises:
            KgqaError: the question's topics could not be found (``EntityNotFoundError``).
        """
        (result,) = self.retrieve_many([RetrievalRequest(question, tuple(topic_ids), hops)])
        if isinstance(result, KgqaError):
            raise result
        return result

    def retrieve_many(
        self, requests: Sequence[RetrievalRequest], *, threads: int = 1
    ) -> list[Retrieval | KgqaError]:
        """Each request's retrieval, or the error that stopped it (its topics not found), in order.

        The questions are linked one by one, then retrieved together: their texts embedded in one
        call, their subgraphs queried on ``threads`` threads (the store's queries release the
        GIL), the scorers run once over all of them (:func:`triple_probabilities_many`), and so
        does the MLP planner (:func:`rank_plans_many`); plan enumeration and ranking stay per
        question. A stage done for all of them is timed once and each question is given an equal
        share. Each question's scores are those it gets alone, within float
        error (the embedder's batches: ~1e-7 in float32; in bfloat16 a text's vector can move in
        the third decimal with the texts it is encoded beside).

        When the linker leaves several close candidates for a question's first topic
        (:meth:`LinkResult.contenders`), each is retrieved as the topic and the best fit to the
        question wins (:mod:`kgqa.retrieval.disambiguation`); the ``disambiguate`` timing is the
        work the others took. A question is parsed once (:class:`ParsedQuestion`): the linker
        reads its brackets, the models its text without them.
        """
        if self._relation_words is None:  # read once: every question without capitals needs them
            self._relation_words = RelationWords.from_store(self.store).embedded(self.embedder)
        results: list[Retrieval | KgqaError | None] = []  # None: to score below
        trials: list[_Trial] = []  # every (question, topics) to score, contenders included
        for request in requests:
            started = time.perf_counter()
            parsed = ParsedQuestion.parse(request.question)
            try:
                linked = link(
                    self.store,
                    self.embedder,  # loaded: lower-case questions read acronyms and relation words
                    parsed,
                    topic_ids=request.topic_ids,
                    relation_words=self._relation_words,
                )
            except KgqaError as exc:
                results.append(exc)
                continue
            link_ms = (time.perf_counter() - started) * 1e3
            settings = self.subgraph if request.hops is None else replace(self.subgraph, hops=request.hops)
            topics = linked.topics
            contenders = linked.contenders()
            choices = (
                [(c, *[t for t in topics[1:] if t.id != c.id]) for c in contenders]
                if len(contenders) >= 2
                else [topics]
            )
            question = len(results)
            results.append(None)
            trials += [
                _Trial(question, parsed, tuple(choice), settings, link_ms, len(choices) > 1)
                for choice in choices
            ]
        for question, runs in self._score_trials(trials, threads).items():
            results[question] = self._choose(runs)
        return [r for r in results if r is not None]

    def _choose(self, runs: list[tuple[_Trial, Retrieval]]) -> Retrieval:
        """The retrieval of a question's topics, or of the contender that fits it best."""
        link_ms = runs[0][0].link_ms
        if not runs[0][0].contended:
            retrieval = runs[0][1]
            retrieval.timings_ms["link"] = link_ms
            return retrieval
        retrievals = [r for _, r in runs]
        contenders = [r.topics[0] for r in retrievals]
        logits = (
            None
            if self.planner is None
            else [r.plans.best_logit() if r.plans else float("-inf") for r in retrievals]
        )
        disambiguation, order = rank_topics(contenders, logits, [_best_topic_triple(r) for r in retrievals])
        chosen = retrievals[order[0]]
        chosen.timings_ms["link"] = link_ms
        chosen.timings_ms["disambiguate"] = sum(
            sum(r.timings_ms.values()) for i, r in enumerate(retrievals) if i != order[0]
        )
        return replace(chosen, disambiguation=disambiguation)

    def _score_trials(self, trials: list[_Trial], threads: int) -> dict[int, list[tuple[_Trial, Retrieval]]]:
        """Embed, extract, score, plan and rank every trial; by question, in trial order. One
        trial's work is small, and runs on the process's threads (:func:`batch_threads`,
        :func:`map_on_threads`)."""
        if not trials:
            return {}
        started = time.perf_counter()
        # A trained planner also reads the text around the topic mention; otherwise the question only.
        texts = [
            question_views(t.parsed.text, [c.mention or c.name for c in t.topics])
            if self._trained_planner
            else [t.parsed.text]
            for t in trials
        ]
        with batch_threads(threads, len(trials)):
            vectors = embed_distinct(self.embedder, [text for views in texts for text in views]).split(
                [len(views) for views in texts]
            )
        embedded = time.perf_counter()
        subgraphs = map_on_threads(
            lambda t: subgraph_around(self.store, [c.id for c in t.topics], t.settings),
            trials,
            threads,
            name="kgqa-subgraph",
        )
        self.tables[0].rows([e for sub in subgraphs for e in sub.entity_ids])  # one fetch for all
        extracted = time.perf_counter()
        prepared = [
            self._prepare(trial, views, sub)
            for trial, views, sub in zip(trials, vectors, subgraphs, strict=True)
        ]
        # a question's topic contenders compete at one step cost, their largest subgraph's: a
        # hub's subgraph holds more relation types, and its own cost would favour the lesser name
        most: dict[int, int] = {}
        for trial, sub in zip(trials, subgraphs, strict=True):
            most[trial.question] = max(most.get(trial.question, 0), len(sub.relation_types))
        prepared = [
            replace(p, run_words=replace(p.run_words, relation_count=most[t.question]))
            if t.contended and p.run_words is not None
            else p
            for p, t in zip(prepared, trials, strict=True)
        ]
        prepared_at = time.perf_counter()
        with torch.inference_mode(), batch_threads(threads, len(trials)):
            if self.scorer is None:
                probabilities = [torch.zeros(p.subgraph.num_triples) for p in prepared]
            else:
                probabilities = triple_probabilities_many(
                    prepared, self.tables, self.scorer, self.path_scorer
                )
        scored = time.perf_counter()
        plans: list[RankedPlans | None] = [None] * len(trials)
        if self.planner is not None:
            with torch.inference_mode():
                plans = list(
                    rank_plans_many(
                        self.planner,
                        prepared,
                        self.tables,
                        name_prior=self.name_prior,
                        answer_type=self.answer_type,
                        answer_kind=self.answer_kind,
                        tail_kind=self.tail_kind,
                    )
                )
        planned = time.perf_counter()
        share = 1e3 / len(trials)
        by_question: dict[int, list[tuple[_Trial, Retrieval]]] = {}
        for trial, ready, scores, ranked in zip(trials, prepared, probabilities, plans, strict=True):
            timings = {
                "embed_question": (embedded - started) * share,
                **ready.timings_ms,
                "extract": (extracted - embedded) * share + ready.timings_ms["extract"],
                "score": (scored - prepared_at) * share,
            }
            if ranked is not None:
                timings["plan"] = (planned - scored) * share
            retrieval = self._rank(trial, ready, scores, ranked, timings)
            by_question.setdefault(trial.question, []).append((trial, retrieval))
        return by_question

    def _prepare(self, trial: _Trial, views: torch.Tensor, sub: Subgraph) -> PreparedQuestion:
        """A trial's scorer and planner inputs around its subgraph ``sub``."""
        text = trial.parsed.text
        tokens = words = cues = chains = kinds = asks = noun = None
        mentions = [t.mention or t.name for t in trial.topics]
        if isinstance(self.planner, AttentionPlanScorer):
            tokens = question_token_states(self.embedder, text)
        if self.planner is not None and (self.answer_type or self.answer_kind or self.tail_kind):
            asked = answer_noun(text, mentions)
            noun = None if asked is None else self._words()([[asked]])[0, 0]
        if self.plans_by_name or (self._trained_planner and self.name_prior):
            vectors = self._words()  # first: it also reads the model's words for question_runs
            runs = question_runs(
                text, mentions, self._relation_phrases, self._relation_name_words, self._known_words
            )
            words = vectors(runs.words)
            cues = NameMatchPlanner.sharing_cues(runs.words, runs.shares)
            chains = torch.tensor(runs.chained, dtype=torch.bool)
            kinds = torch.tensor(runs.kinds, dtype=torch.bool)
            if self.plans_by_name:  # a trained planner read it worse through the name prior
                asks = torch.tensor(runs.asks, dtype=torch.bool)
        prepared = prepare(
            self.store,
            views,
            [t.id for t in trial.topics],
            self.tables,
            trial.settings,
            question_tokens=tokens,
            subgraph=sub,
        )
        runs_read = mediators = None
        if words is not None:
            runs_read = WordRuns(words, cues, chains, kinds, asks)
            named = self.tables[0].has_text[prepared.entity_rows]
            mediators = prepared.subgraph.mediator_steps(named)
        kinds = tails = None
        if noun is not None and not names_a_kind_of(text):
            if self.answer_kind:
                kinds = self._kind_fit(noun, prepared.subgraph)
            if self.tail_kind:
                tails = self._tail_kind_fit(noun, prepared.subgraph)
        prepared = replace(
            prepared,
            run_words=runs_read,
            answer_noun=noun,
            mediators=mediators,
            answer_kinds=kinds,
            tail_kinds=tails,
        )
        if self.plans_by_name and chains is not None:
            # "the wife of X 's husband" may come home; "X 's co-stars" and "the films of X" may not
            sub = replace(prepared.subgraph, topic_walks_if_needed=bool(chains.any()))
            prepared = replace(prepared, subgraph=sub)
        return prepared

    def _kind_fit(self, noun: torch.Tensor, sub: Subgraph) -> torch.Tensor | None:
        """FloatTensor [N]: per local entity of ``sub``, the best cosine of ``noun`` with the
        kinds the graph's schema gives it (the kinds of the relations it heads,
        :class:`SchemaKinds`), -inf where none is known; None on a graph whose relation names say
        no kind.

        The subgraph's triples give the kinds of the entities it expanded. The others (hubs,
        which extraction does not expand, and its last hop) are read from the store for the
        :data:`KINDS_LOOKED_UP` kinds nearest the noun only (:func:`heads_of_types`): the
        countries that answer "what country" are hubs.
        """
        schema = self._schema_kinds
        if schema is None or not schema.of_relation:
            return None
        cosine = schema.cosines(noun)
        local = [schema.of_relation.get(t) for t in sub.relation_types]
        fit = entity_kind_fit(local, cosine, sub.head, sub.rel, sub.num_entities)
        nearest = set(sorted(schema.kinds, key=lambda k: -cosine[k])[:KINDS_LOOKED_UP])
        unread = [sub.entity_ids[i] for i in torch.nonzero(torch.isinf(fit)).flatten().tolist()]
        looked_up = [t for t, k in schema.of_relation.items() if k in nearest]
        index = sub.local_ids()
        for entity, relation in heads_of_types(self.store, unread, looked_up):
            i = index[entity]
            fit[i] = max(float(fit[i]), cosine[schema.of_relation[relation]])
        return fit

    def _tail_kind_fit(self, noun: torch.Tensor, sub: Subgraph) -> torch.Tensor | None:
        """FloatTensor [N]: per local entity of ``sub``, the best cosine of ``noun`` with the
        kinds plain relation names give it as the tail of the subgraph's triples
        (:func:`~kgqa.retrieval.graph.kinds.tail_kind`), -inf where none does; None where no
        relation type of ``sub`` names one. A walk that ends at an entity came to it through a
        triple of the subgraph, so the subgraph holds every kind the walk's last step gives."""
        schema = self._schema_kinds
        if schema is None:
            return None
        local = [schema.of_tail.get(t) for t in sub.relation_types]
        if all(k is None for k in local):
            return None
        return entity_kind_fit(local, schema.cosines(noun), sub.tail, sub.rel, sub.num_entities)

    @functools.cached_property
    def _schema_kinds(self) -> SchemaKinds | None:
        """The kinds the store's relation names give their heads and tails, embedded on first
        use (the first question naming a kind); None on a graph whose names say none."""
        return SchemaKinds.of(self.tables[1].index, self.embedder.embed)

    def _words(self) -> WordVectors:
        """The kept word vectors, made with the embedder on first use (it loads lazily)."""
        if self._word_vectors is None:
            self._word_vectors = WordVectors(self.embedder)
            self._known_words = known_words(self.embedder)
        return self._word_vectors

    def _rank(
        self,
        trial: _Trial,
        prepared: PreparedQuestion,
        probabilities: torch.Tensor,
        plans: RankedPlans | None,
        timings: dict[str, float],
    ) -> Retrieval:
        """Rank one trial's scored triples, lifting the walks of its likeliest plans."""
        sub = prepared.subgraph
        rescored_at = time.perf_counter()
        scores = probabilities
        if self.rescoring == "path":
            scores = path_rescore(probabilities, sub.head, sub.tail, sub.topic, sub.num_entities)
        elif self.rescoring == "plan" and plans is not None:
            scores = plan_guided_scores(probabilities, plans, sub)
        if scores is not probabilities:
            timings["rescore"] = (time.perf_counter() - rescored_at) * 1e3
        entities = self.tables[0]
        named = entities.has_text[prepared.entity_rows]
        nameless = nameless_names(sub, named, entities.names, scores)
        # A ChainMap's lookups cost ~5x a dict's, and evidence reads a name per triple shown.
        names = ChainMap(nameless, entities.names) if nameless else entities.names
        return Retrieval(
            trial.parsed.asked,
            trial.topics,
            prepared,
            scores,
            probabilities,
            names,
            timings,
            plans,
            named=named,
        )


@dataclass(frozen=True, slots=True)
class RetrievalRequest:
    """One question for :meth:`Retriever.retrieve_many`: its text, the topic ids given (else
    linked) and how far to walk (``None``: the retriever's ``subgraph.hops``)."""

    question: str
    topic_ids: tuple[str, ...] = ()
    hops: int | None = None


@dataclass(frozen=True, slots=True)
class _Trial:
    """One question with one choice of topics, to score (a contended question has several)."""

    question: int  # index into the requests
    parsed: ParsedQuestion
    topics: tuple[LinkedEntity, ...]
    settings: SubgraphSettings
    link_ms: float
    contended: bool


def question_token_states(embedder: Embedder, text: str) -> torch.Tensor:
    """FloatTensor [T, d]: ``text``'s token states, for the word-order planner.

    Raises:
        ConfigError: the embedder gives no token states (only the transformer embedder does).
    """
    embed_tokens = getattr(embedder, "embed_tokens", None)
    if embed_tokens is None:
        raise ConfigError(
            f"the checkpoint's word-order planner needs token states, which embedder {embedder.model_id!r} "
            "does not give",
            hint="use the transformer embedder the checkpoint was trained with",
        )
    states: torch.Tensor = embed_tokens([text])[0]
    return states


def _best_topic_triple(retrieval: Retrieval) -> float:
    """The scorer's best probability among the triples touching the first topic (local id 0)."""
    sub = retrieval.prepared.subgraph
    touching = (sub.head == 0) | (sub.tail == 0)
    return float(retrieval.probabilities[touching].max()) if bool(touching.any()) else 0.0
