"""``kgqa prepare --dry-run``: what ``kgqa prepare`` would write into a user's graph, where, about
how much, and which privileges it needs; nothing is written.

Sizes are estimates of the stored values, from the label's counts and mean name and id lengths:
a normalised name is about the name's length, a vector ``dimension`` x 4 bytes (Neo4j stores
float32), a hub slice ``retrieval.max_per_node`` far ids. Neo4j adds record overhead (tens of
bytes per property), and each index roughly the size of what it indexes again (a vector index a
little more: its HNSW graph).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ingest.prepare import fact_types
from kgqa.store import queries
from kgqa.store.index_schema import index_aliases
from kgqa.store.mapping import GraphMapping, quote
from kgqa.store.protocol import GraphStore
from kgqa.store.schema import (
    SEEK_INDEX_TYPES,
    count_entities,
    list_indexes,
    stored_mapping,
    wants_text_index,
)

#: Bytes a property adds besides its value (Neo4j's property record and key), roughly.
PROPERTY_OVERHEAD = 16
#: The hub-slice properties (ingest.slices) kgqa writes on entities.
SLICE_PROPERTIES = (
    "kgqa_slice_heads",
    "kgqa_slice_tails",
    "kgqa_slice_heads_via_self",
    "kgqa_slice_tails_via_self",
    "kgqa_slice_cap",
    "kgqa_slice_degree",
    "kgqa_slice_rows",
)


def neo4j_privileges(mapping: GraphMapping) -> tuple[str, ...]:
    """The GRANTs a Neo4j role needs for ``kgqa prepare``, ``ask``, ``ask --save`` and ``unprepare``
    on ``mapping``'s graph (Enterprise/Aura; Community has no roles). ``db`` is the database and
    ``role`` the kgqa user's role."""
    label = quote(mapping.entity_label)
    types = ", ".join(quote(t) for t in mapping.fact_types) or "*"
    own = "KgqaRelationType, KgqaMeta, KgqaQuestion"
    written = ", ".join(
        quote(p)
        for p in (
            mapping.name_norm_property,
            mapping.embedding_property,
            mapping.entity_property("embedding_model"),
            *SLICE_PROPERTIES,
        )
    )
    return (
        f"GRANT MATCH {{*}} ON GRAPH db NODES {label}, {own} TO role",
        f"GRANT TRAVERSE ON GRAPH db RELATIONSHIPS {types} TO role",
        f"GRANT SET PROPERTY {{{written}}} ON GRAPH db NODES {label} TO role",
        f"GRANT CREATE ON GRAPH db NODES {own} TO role",
        f"GRANT DELETE ON GRAPH db NODES {own} TO role",
        f"GRANT SET PROPERTY {{*}} ON GRAPH db NODES {own} TO role",
        "GRANT CREATE NEW NODE LABEL ON DATABASE db TO role",
        "GRANT CREATE NEW PROPERTY NAME ON DATABASE db TO role",
        "GRANT INDEX MANAGEMENT ON DATABASE db TO role",
        "GRANT CONSTRAINT MANAGEMENT ON DATABASE db TO role",
        "GRANT EXECUTE PROCEDURE db.create.setNodeVectorProperty ON DBMS TO role  (PUBLIC has it by default)",
        "only for 'ask --save --link-entities': GRANT CREATE NEW RELATIONSHIP TYPE ON DATABASE db TO role, "
        "GRANT CREATE ON GRAPH db RELATIONSHIPS KGQA_TOPIC, KGQA_ANSWER TO role, and DELETE for unprepare",
    )


@dataclass(slots=True)
class Write:
    """One kind of thing ``kgqa prepare`` writes: where, how many, about how many bytes."""

    what: str
    where: str
    count: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "where": self.where, "count": self.count, "bytes": self.bytes}


@dataclass(slots=True)
class PreparePlan:
    """The outcome of ``plan_prepare`` (``kgqa prepare --dry-run [--json]``)."""

    mapping: dict[str, Any]
    entities: int
    keyed: int
    fact_types: list[str]
    writes: list[Write] = field(default_factory=list)
    indexes: list[str] = field(default_factory=list)
    recorded_mapping_differs: list[str] = field(default_factory=list)
    privileges: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(w.bytes for w in self.writes)

    @property
    def bytes_per_million_entities(self) -> int:
        return round(self.total_bytes * 1_000_000 / self.keyed) if self.keyed else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "mapping": self.mapping,
            "entities": self.entities,
            "keyed_entities": self.keyed,
            "skipped_entities": self.entities - self.keyed,
            "fact_types": self.fact_types,
            "writes": [w.to_dict() for w in self.writes],
            "indexes": self.indexes,
            "total_bytes": self.total_bytes,
            "bytes_per_million_entities": self.bytes_per_million_entities,
            "recorded_mapping_differs": self.recorded_mapping_differs,
            "privileges": list(self.privileges),
        }

    def render(self) -> str:
        m = self.mapping
        lines = [
            f"kgqa prepare would read :{m['entity_label']} (id '{m['id_property']}', name "
            f"'{m['name_property']}', text '{m['text_property']}'): {self.entities:,} entities, "
            f"{self.entities - self.keyed:,} of them skipped (no string id); fact types: "
            + (", ".join(self.fact_types) or "(none)"),
        ]
        if self.recorded_mapping_differs:
            lines.append(
                "the graph was prepared for another mapping ("
                + "; ".join(self.recorded_mapping_differs)
                + "): a plain prepare is refused, 'kgqa prepare --redo' removes the old writes first"
            )
        lines.append("it would write (nothing is written by --dry-run):")
        lines += [f"  {w.what:<34} on {w.where:<28} {w.count:>12,}  ~{_size(w.bytes)}" for w in self.writes]
        lines.append(
            f"  total ~{_size(self.total_bytes)} (~{_size(self.bytes_per_million_entities)} per million "
            "entities), plus Neo4j's record overhead and about as much again in indexes"
        )
        lines.append("indexes and constraints (created where no index of the same schema exists):")
        lines += [f"  {ix}" for ix in self.indexes]
        lines.append("Neo4j privileges needed (db = your database, role = kgqa's user's role):")
        lines += [f"  {p}" for p in self.privileges]
        lines.append("undo: 'kgqa unprepare' removes all of it (kgqa_* properties, nodes, indexes)")
        return "\n".join(lines)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def plan_prepare(
    store: GraphStore, *, model_id: str, dimension: int, slice_cap: int, embed: bool = True
) -> PreparePlan:
    """What ``prepare_store`` (and, with ``embed``, ``embed_store``) would write; reads only.

    Args:
        model_id: the embedder's id (entities already embedded with it are not counted).
        dimension: the embedder's vector size.
        slice_cap: ``retrieval.max_per_node``, the cap hub slices are built for.
    """
    mapping = store.mapping
    [row] = store.run(queries.get("prepare_estimate")) or [{}]
    entities, keyed = int(row.get("entities") or 0), int(row.get("keyed") or 0)
    name_chars = float(row.get("name_chars") or 0.0)
    id_chars = float(row.get("id_chars") or 0.0)
    types = fact_types(store)
    hubs = len(store.run(queries.get("ingest_slices_pending"), {"max_per_node": slice_cap}))
    recorded = stored_mapping(store)
    plan = PreparePlan(
        mapping=json.loads(mapping.to_json()),
        entities=entities,
        keyed=keyed,
        fact_types=types,
        recorded_mapping_differs=recorded.differences(mapping) if recorded and recorded != mapping else [],
        privileges=neo4j_privileges(mapping),
    )
    where = f":{quote(mapping.entity_label)}"
    names = int(row.get("names_pending") or 0)
    plan.writes.append(
        Write(mapping.name_norm_property, where, names, round(names * (name_chars + PROPERTY_OVERHEAD)))
    )
    plan.writes.append(
        Write(
            "kgqa_slice_* (hub slices)",
            where,
            hubs,
            round(hubs * (slice_cap * (id_chars + 4) + 6 * PROPERTY_OVERHEAD)),
        )
    )
    nodes = len(types) + 1
    plan.writes.append(
        Write("relation-type and meta nodes", ":KgqaRelationType, :KgqaMeta", nodes, nodes * 200)
    )
    if embed:
        pending = count_entities(store, model_id).pending
        vector = dimension * 4 + PROPERTY_OVERHEAD
        model = len(model_id) + PROPERTY_OVERHEAD
        plan.writes.append(Write(mapping.embedding_property, where, pending, pending * vector))
        plan.writes.append(Write(mapping.entity_property("embedding_model"), where, pending, pending * model))
        plan.writes.append(
            Write("relation-type vectors", ":KgqaRelationType", len(types), len(types) * vector)
        )
    plan.indexes = _planned_indexes(store, dimension=dimension, embed=embed)
    return plan


def _planned_indexes(store: GraphStore, *, dimension: int, embed: bool) -> list[str]:
    """kgqa's indexes and constraints, each with its schema; one for which an index of the same
    schema exists (the user's, under another name) says it is reused, not created."""
    mapping = store.mapping
    label = quote(mapping.entity_label)
    present = list_indexes(store)
    names = {ix.name for ix in present}
    seeks = {(ix.labels, ix.properties) for ix in present if ix.kind.upper() in SEEK_INDEX_TYPES}
    reused = index_aliases(present, mapping)
    planned = [
        ("entity_id", f"RANGE :{label}({mapping.id_property})", (mapping.id_property,)),
        ("entity_name_norm", f"RANGE :{label}({mapping.name_norm_property})", (mapping.name_norm_property,)),
        ("entity_name", f"FULLTEXT :{label}({mapping.name_property})", None),
        *(
            [
                (
                    "entity_text",
                    f"FULLTEXT :{label}({mapping.text_property}) (texts of typed entities: MoR)",
                    None,
                )
            ]
            if wants_text_index(store)
            else []
        ),
        ("relation_type_name", "UNIQUE :KgqaRelationType(name)", None),
        ("kgqa_question_id", "UNIQUE :KgqaQuestion(id)", None),
    ]
    if embed:
        planned += [
            ("entity_embedding", f"VECTOR :{label}({mapping.embedding_property}), {dimension} dims", None),
            ("relation_type_embedding", f"VECTOR :KgqaRelationType(embedding), {dimension} dims", None),
        ]
    lines = []
    for kgqa_name, schema, seek_property in planned:
        name = mapping.index_name(kgqa_name)
        line = f"{name}: {schema}"
        if name in reused:
            line += f" (reused: your index '{reused[name]}' has this schema; not created)"
        elif (
            seek_property is not None
            and name not in names
            and ((mapping.entity_label,), seek_property) in seeks
        ):
            line += " (reused: an index of yours has this schema; not created)"
        lines.append(line)
    return lines
