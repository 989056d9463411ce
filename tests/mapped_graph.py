"""A small graph kgqa did not ingest, in a user's own schema, and the mapping that reads it.

Shared by the embedded tests of kgqa.store.mapping / ingest.prepare and the live Neo4j suite, so
both run the same graph. The names are awkward on purpose: a label and a fact type with spaces,
properties that are not id/name/text, a user property called ``embedding`` that kgqa must not
overwrite, a non-fact relationship type and a user ``:Question`` node kgqa must not touch.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgqa.names import label_name, relationship_type
from kgqa.store.mapping import GraphMapping, quote

MAPPING = GraphMapping.of(
    entity_label="Film Thing",
    id_property="uid",
    name_property="title",
    text_property="blurb",
    fact_types=("DIRECTED BY", "STARRED"),
)

#: One CREATE statement (both backends accept it as is).
USER_GRAPH = """
CREATE (m1:`Film Thing` {uid: 'm1', title: 'The Matrix', blurb: 'a film about a simulation',
                         embedding: [9.0, 9.0]}),
       (m2:`Film Thing` {uid: 'm2', title: 'Speed'}),
       (p1:`Film Thing` {uid: 'p1', title: 'Lana Wachowski'}),
       (p2:`Film Thing` {uid: 'p2', title: 'Keanu Reeves'}),
       (q:Question {id: 'user-q', text: 'a question the user keeps'}),
       (m1)-[:`DIRECTED BY`]->(p1),
       (m1)-[:STARRED]->(p2),
       (m2)-[:STARRED]->(p2),
       (p2)-[:LIKES]->(m2),
       (q)-[:ABOUT]->(m1)
"""

#: The properties kgqa may add to the user's entity nodes (kgqa prepare + kgqa embed).
KGQA_OWNED = {"kgqa_name_norm", "kgqa_embedding", "kgqa_embedding_model"}

#: What a snapshot of the user's data reads (labels and properties of every node but kgqa's own,
#: relationships by type); kgqa-owned properties are left out so before/after compare equal.
SNAPSHOT_NODES = (
    "MATCH (n) WHERE NOT any(l IN labels(n) WHERE l STARTS WITH 'Kgqa') "
    "RETURN labels(n) AS labels, properties(n) AS props ORDER BY coalesce(n.uid, n.id)"
)
SNAPSHOT_RELS = "MATCH (a)-[r]->(b) RETURN type(r) AS type, count(*) AS n ORDER BY type"


#: The MoR graph (tests/fixtures/hpo_mini_*: typed, text-rich) in a user's own schema.
TYPED_MAPPING = GraphMapping.of(
    entity_label="Bio Thing",
    id_property="uid",
    name_property="title",
    text_property="blurb",
    type_property="kind",
)
HPO_MINI = Path(__file__).resolve().parent / "fixtures" / "hpo_mini"


def write_typed_user_graph(run: Callable[[str, dict[str, Any]], object]) -> None:
    """Write the hpo_mini nodes and edges as a user would have them (no kgqa property, label or
    index) through ``run(cypher, params)``, on either backend."""
    with Path(f"{HPO_MINI}_nodes.csv").open() as fh:
        nodes = [
            {"uid": r["id"], "title": r["name"], "blurb": r["text"] or None, "kind": label_name(r["type"])}
            for r in csv.DictReader(fh)
        ]
    run(
        "UNWIND $rows AS row "
        "CREATE (:`Bio Thing` {uid: row.uid, title: row.title, blurb: row.blurb, kind: row.kind})",
        {"rows": nodes},
    )
    edges: dict[str, list[dict[str, str]]] = {}
    with Path(f"{HPO_MINI}_edges.csv").open() as fh:
        for r in csv.DictReader(fh):
            edges.setdefault(relationship_type(r["type"]), []).append({"src": r["src"], "dst": r["dst"]})
    for rel_type, rows in edges.items():
        run(
            "UNWIND $rows AS row MATCH (a:`Bio Thing` {uid: row.src}), (b:`Bio Thing` {uid: row.dst}) "
            f"CREATE (a)-[:{quote(rel_type)}]->(b)",
            {"rows": rows},
        )
