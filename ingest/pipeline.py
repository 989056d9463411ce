"""``kgqa ingest`` end to end: read a source, load it, embed it, index it, report."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ingest.embedding import EmbedReport, embed_store
from ingest.loader import IngestReport, fingerprint, load
from ingest.prepare import prepare_store
from ingest.prepare_plan import PreparePlan, plan_prepare
from ingest.readers import get_reader, source_paths
from ingest.unprepare import UnprepareReport, unprepare_store
from kgqa.config import Settings
from kgqa.errors import ConfigError
from kgqa.store import graph_mapping, open_store
from kgqa.store.mapping import GraphMapping
from kgqa.store.protocol import GraphStore
from kgqa.store.schema import (
    count_pending_entities,
    embedding_complete,
    mark_embedding_complete,
    read_embedding_meta,
    stored_mapping,
)


@dataclass(slots=True)
class IngestResult:
    """The load report plus the embedding report (None with ``--no-embed``)."""

    load: IngestReport
    embedding: EmbedReport | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "load": self.load.to_dict(),
            "embedding": self.embedding.to_dict() if self.embedding else None,
        }

    def render(self) -> str:
        r = self.load
        if r.already_complete:
            lines = [f"{r.source}: already loaded completely; 0 new writes (use --force to re-merge)"]
        else:
            resumed = f" (resumed after line {r.resumed_after_line})" if r.resumed_after_line else ""
            lines = [
                f"loaded {r.source} [{r.format}]{resumed}: {r.lines} lines, {r.triple_records} triples, "
                f"{r.entity_records} entity records, {r.relation_types} new relation types, "
                f"{r.bad_lines} bad lines skipped",
                f"  new writes: {r.writes.nodes_created} nodes, "
                f"{r.writes.relationships_created} relationships, "
                f"{r.writes.properties_set} properties, {r.writes.labels_added} labels; "
                f"{r.slices_built} hub slices built",
                f"  {r.seconds:.1f}s, {r.triples_per_second:,.0f} triples/s",
            ]
        if self.embedding:
            e = self.embedding
            lines.append(
                f"embedded {e.entities_embedded} entities, {e.relation_types_embedded} relation types with "
                f"{e.model_id} in {e.embed_seconds:.1f}s ({e.entities_per_second:,.0f}/s); "
                f"indexes in {e.index_seconds:.1f}s"
            )
        return "\n".join(lines)


@contextmanager
def _bar(progress: bool, **kwargs: Any) -> Iterator[tqdm]:
    bar = tqdm(disable=not progress, leave=False, dynamic_ncols=True, **kwargs)
    try:
        yield bar
    finally:
        bar.close()


def _embed(store: GraphStore, settings: Settings, *, reembed: bool, progress: bool) -> EmbedReport:
    from kgqa.embed import make_embedder

    embedder = make_embedder(settings.embedder)
    pending = count_pending_entities(store, embedder.model_id) if progress else None
    with _bar(progress, total=pending, desc="embedding", unit="entities") as bar:
        return embed_store(store, embedder, reembed=reembed, on_page=bar.update)


def refuse_mapped_store(store: GraphStore) -> None:
    """``kgqa ingest`` writes kgqa's own graph model; refuse a store read through a user's mapping.

    Ingest MERGEs ``:Entity {id}`` nodes, sets their name and text properties and writes
    ``kgqa_degree`` on every node: on a user's graph it would overwrite their name and text
    properties and touch every node.

    Raises:
        ConfigError: the configured mapping, or the one the graph was prepared for, is not kgqa's own.
    """
    mapping = store.mapping if not store.mapping.is_default else stored_mapping(store)
    if mapping is not None and not mapping.is_default:
        raise _mapped_ingest_error(mapping)


def _mapped_ingest_error(mapping: GraphMapping) -> ConfigError:
    return ConfigError(
        f"kgqa ingest writes kgqa's own graph model, but this store maps a graph kgqa did not ingest "
        f"(:{mapping.entity_label}, name property '{mapping.name_property}'): it would overwrite their "
        "names and texts and write on every node",
        hint="add facts to your graph with your own tools, then re-run 'kgqa prepare'; to build a kgqa "
        "graph, point at another database or data dir and unset store.entity_* / store.fact_types",
    )


def ingest_source(
    settings: Settings, source: Path, fmt: str, *, options: dict[str, Any], force: bool, progress: bool
) -> IngestResult:
    """Load ``source`` in format ``fmt`` into the configured store; embed unless disabled."""
    items = get_reader(fmt, **options)(source)  # checks the path (file, not directory) before fingerprinting
    paths = source_paths(fmt, source, **options)
    key = fingerprint(fmt, paths, {k: str(v) for k, v in options.items() if k != "edges"})
    configured = graph_mapping(settings.store)
    if not configured.is_default:  # before opening: an embedded store would be created first
        raise _mapped_ingest_error(configured)
    with open_store(settings.store, create=True) as store:
        refuse_mapped_store(store)
        was_complete = embedding_complete(store)
        mark_embedding_complete(store, False)  # new entities wait for 'kgqa embed' (ask counts them)
        with _bar(progress, desc=f"loading {source.name}", unit="lines") as bar:

            def advance(line: int) -> None:
                bar.update(line - bar.n)

            report = load(
                store,
                items,
                source=str(source),
                fmt=fmt,
                source_key=key,
                batch_size=settings.ingest.batch_size,
                on_error=settings.ingest.on_error,
                force=force,
                on_batch=advance,
                slice_cap=settings.retrieval.max_per_node,
            )
        if was_complete and report.writes.nodes_created == 0:
            mark_embedding_complete(store, True)  # no new entity: still complete
        embedding = (
            _embed(store, settings, reembed=False, progress=progress) if settings.ingest.embed else None
        )
    return IngestResult(report, embedding)


def embed_existing(settings: Settings, *, reembed: bool, progress: bool) -> EmbedReport:
    """``kgqa embed``: embed what the store holds without an embedding from the configured model."""
    with open_store(settings.store) as store:
        return _embed(store, settings, reembed=reembed, progress=progress)


def prepare_existing(
    settings: Settings, *, embed: bool, progress: bool, redo: bool = False
) -> dict[str, Any]:
    """``kgqa prepare``: indexes, normalised names and relation types for a graph kgqa did not
    ingest (ingest.prepare), then, with ``embed``, what ``kgqa embed`` does."""
    with open_store(settings.store) as store:
        with _bar(progress, desc="normalise names", unit="ent") as bar:
            report = prepare_store(
                store, redo=redo, slice_cap=settings.retrieval.max_per_node, on_page=bar.update
            ).to_dict()
        report["embedding"] = (
            _embed(store, settings, reembed=False, progress=progress).to_dict() if embed else None
        )
    return report


def plan_prepare_existing(settings: Settings, *, embed: bool) -> PreparePlan:
    """``kgqa prepare --dry-run``: what prepare would write (ingest.prepare_plan); reads only.

    The vector size is the one recorded for the configured model, else the embedder's own
    (which loads it; not with ``embed`` off)."""
    with open_store(settings.store) as store:
        recorded = read_embedding_meta(store)
        if not embed:
            model_id, dimension = settings.embedder.model, 0
        elif recorded is not None and recorded.model_id == settings.embedder.model:
            model_id, dimension = recorded.model_id, recorded.dimension
        else:
            from kgqa.embed import make_embedder

            embedder = make_embedder(settings.embedder)
            model_id, dimension = embedder.model_id, embedder.dimension
        return plan_prepare(
            store,
            model_id=model_id,
            dimension=dimension,
            slice_cap=settings.retrieval.max_per_node,
            embed=embed,
        )


def unprepare_existing(settings: Settings, *, progress: bool) -> UnprepareReport:
    """``kgqa unprepare``: remove what kgqa wrote into the user's graph (ingest.unprepare)."""
    with open_store(settings.store) as store, _bar(progress, desc="unprepare", unit="pages") as bar:
        return unprepare_store(store, on_page=bar.update)
