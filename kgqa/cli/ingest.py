"""``kgqa ingest``, ``kgqa embed`` and ``kgqa prepare``."""

from __future__ import annotations

from pathlib import Path

import click

from kgqa.cli import CliState, pass_state
from kgqa.cli.common import emit_json, json_option, resolve, store_options, store_overrides
from kgqa.config import redacted

FORMATS = ["metaqa", "tsv", "csv", "rog-jsonl", "primekg", "typed-csv"]


def _parse_columns(value: str | None) -> dict[str, str] | None:
    if not value:
        return None
    mapping = {}
    for part in value.split(","):
        key, sep, column = part.partition("=")
        if not sep or key.strip() not in {"head", "relation", "tail"}:
            raise click.BadParameter(
                f"'{part}' is not head=COL, relation=COL or tail=COL", param_hint="--columns"
            )
        mapping[key.strip()] = column.strip()
    return mapping


@click.command()
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="Source file format.")
@click.option("--on-error", type=click.Choice(["skip", "fail"]), help="On a malformed line: skip it or stop.")
@click.option("--batch-size", type=int, help="Records per write transaction (ingest.batch_size).")
@click.option("--embed/--no-embed", default=None, help="Embed entities and build indexes after loading.")
@click.option(
    "--force", is_flag=True, help="Re-merge a source already loaded completely (writes nothing new)."
)
@click.option("--edges", type=click.Path(exists=True, path_type=Path), help="typed-csv: the edges CSV.")
@click.option("--delimiter", help="tsv/csv: field delimiter (default tab for tsv, comma for csv).")
@click.option("--header/--no-header", default=None, help="tsv/csv: the first line is a header.")
@click.option("--columns", help="tsv/csv header mapping, e.g. head=subject,relation=predicate,tail=object.")
@click.option("--dry-run", is_flag=True, help="Print the resolved configuration and exit.")
@store_options
@json_option
@pass_state
def ingest(
    state: CliState,
    source: Path,
    fmt: str,
    on_error: str | None,
    batch_size: int | None,
    embed: bool | None,
    force: bool,
    edges: Path | None,
    delimiter: str | None,
    header: bool | None,
    columns: str | None,
    dry_run: bool,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Load SOURCE (a KB file) into the graph store, then embed and index it.

    Batches are transactional and resumable: re-running an interrupted ingest continues after
    the last committed batch, and re-running a finished one writes nothing.

    \b
    Examples:
      kgqa ingest ../shared/data/metaqa/kb.txt.gz --format metaqa
      kgqa ingest 2H-kb.txt --format tsv
      kgqa ingest kg.csv --format primekg --on-error skip
      kgqa ingest nodes.csv --edges edges.csv --format typed-csv
    """
    overrides = {
        "store": store_overrides(backend, data_dir),
        "ingest": {"on_error": on_error, "batch_size": batch_size, "embed": embed},
    }
    loaded = resolve(state, overrides, bulk=True)
    if dry_run:
        emit_json(redacted(loaded.settings))
        return
    from ingest.pipeline import ingest_source

    options = {"edges": edges, "delimiter": delimiter, "header": header, "columns": _parse_columns(columns)}
    result = ingest_source(
        loaded.settings,
        source,
        fmt,
        options={k: v for k, v in options.items() if v is not None},
        force=force,
        progress=not as_json,
    )
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(result.render())


@click.command()
@click.option("--reembed", is_flag=True, help="Switch the store to the configured model, re-embedding all.")
@click.option("--model", help="Embedding model (embedder.model).")
@store_options
@json_option
@pass_state
def embed(
    state: CliState,
    reembed: bool,
    model: str | None,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Embed entities and relation types that lack an embedding, and (re)build the indexes."""
    loaded = resolve(
        state, {"store": store_overrides(backend, data_dir), "embedder": {"model": model}}, bulk=True
    )
    from ingest.pipeline import embed_existing

    report = embed_existing(loaded.settings, reembed=reembed, progress=not as_json)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(
            f"embedded {report.entities_embedded} entities and "
            f"{report.relation_types_embedded} relation types "
            f"with {report.model_id} ({report.dimension} dims) in {report.embed_seconds:.1f}s "
            f"({report.entities_per_second:.0f}/s); indexes built in {report.index_seconds:.1f}s"
        )


@click.command()
@click.option("--entity-label", help="Label of entity nodes (store.entity_label).")
@click.option("--id-property", help="Unique string id property of entities (store.entity_id_property).")
@click.option("--name-property", help="Name property of entities (store.entity_name_property).")
@click.option("--text-property", help="Description property of entities (store.entity_text_property).")
@click.option(
    "--fact-types",
    help="Comma-separated relationship types that are KG facts (store.fact_types; default: all).",
)
@click.option("--no-embed", is_flag=True, help="Only indexes, names and relation types; embed later.")
@click.option("--model", help="Embedding model (embedder.model).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Write nothing: show what would be written, where, its estimated size and the Neo4j privileges.",
)
@click.option(
    "--redo",
    is_flag=True,
    help="The graph was prepared for another mapping: remove kgqa's writes for it first (as unprepare).",
)
@store_options
@json_option
@pass_state
def prepare(
    state: CliState,
    entity_label: str | None,
    id_property: str | None,
    name_property: str | None,
    text_property: str | None,
    fact_types: str | None,
    no_embed: bool,
    model: str | None,
    dry_run: bool,
    redo: bool,
    backend: str | None,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Make an existing graph (one kgqa did not ingest) ready for 'kgqa ask', in place.

    Reads entities through the schema mapping (flags, KGQA_STORE__ENTITY_LABEL etc., or the
    [store] section of the config file), creates kgqa_* indexes, writes kgqa_name_norm on each
    named entity, one KgqaRelationType node per fact type, kgqa_slice_* on hubs (entities with
    more fact relationships than retrieval.max_per_node: the far ids a hub topic's subgraph
    expands), then embeds what lacks an embedding (kgqa_embedding). Re-running writes only what is
    missing or stale; re-run it after changing the graph. Nothing else on your nodes changes.
    --dry-run shows all of it first; 'kgqa unprepare' removes all of it.
    """
    mapped = {
        "entity_label": entity_label,
        "entity_id_property": id_property,
        "entity_name_property": name_property,
        "entity_text_property": text_property,
        "fact_types": fact_types,
    }
    loaded = resolve(
        state, {"store": {**store_overrides(backend, data_dir), **mapped}, "embedder": {"model": model}}
    )
    if dry_run:
        from ingest.pipeline import plan_prepare_existing

        plan = plan_prepare_existing(loaded.settings, embed=not no_embed)
        if as_json:
            emit_json(plan.to_dict())
        else:
            click.echo(plan.render())
        return
    from ingest.pipeline import prepare_existing

    report = prepare_existing(loaded.settings, embed=not no_embed, progress=not as_json, redo=redo)
    if as_json:
        emit_json(report)
        return
    types = report["relation_types"]
    click.echo(
        f"prepared :{report['entity_label']}: {report['names_normalised']:,} names normalised, "
        f"{len(types)} fact types ({', '.join(types[:8])}{', ...' if len(types) > 8 else ''}), "
        f"{report['slices_built']:,} hub slices in {report['seconds']:.1f}s"
        + (
            f"; {report['entities_skipped']:,} entities without a string id skipped"
            if report["entities_skipped"]
            else ""
        )
    )
    embedded = report["embedding"]
    if embedded:
        click.echo(
            f"embedded {embedded['entities_embedded']:,} entities and {embedded['relation_types_embedded']} "
            f"relation types with {embedded['model_id']}"
        )


@click.command()
@click.option(
    "--entity-label", help="Label of entity nodes, if the store has no record of it (store.entity_label)."
)
@store_options
@json_option
@pass_state
def unprepare(
    state: CliState, entity_label: str | None, backend: str | None, data_dir: str | None, as_json: bool
) -> None:
    """Remove everything kgqa prepare, embed and ask --save wrote into your graph.

    Removes the kgqa_* properties (names, vectors, hub slices) from your entity nodes, kgqa's
    own nodes (KgqaRelationType, KgqaQuestion with their relationships, KgqaMeta) and kgqa's
    indexes and constraints, in batches; an interrupted run resumes. The mapping is read from
    the store (what prepare recorded), so the current configuration cannot make it miss anything.
    """
    store = {**store_overrides(backend, data_dir), "entity_label": entity_label}
    loaded = resolve(state, {"store": store})
    from ingest.pipeline import unprepare_existing

    report = unprepare_existing(loaded.settings, progress=not as_json)
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(
        f"unprepared :{report.entity_label}: {report.properties_removed:,} properties removed, "
        f"{report.nodes_deleted:,} kgqa nodes and {report.relationships_deleted:,} relationships deleted, "
        f"{report.schema_dropped} indexes/constraints dropped in {report.seconds:.1f}s"
    )
