// ingest_triples: upserts triples of ONE relationship type, creating missing endpoint entities.
// params: $rel_type: string — a valid relationship type name; $rows: list<map> — {h, h_norm, t, t_norm}
// returns: nothing
// notes: endpoints first seen here are named by their id until a source names them. The type is
//        applied with a dynamic type `$(rel_type)` (Neo4j 5.26+); `WITH $rel_type AS rel_type`
//        makes the same text valid in both dialects. MERGE keeps a re-run from duplicating edges.
//        A new relationship adds one to both ends' `kgqa_degree` (the hub test of subgraph_hop;
//        ingest_degrees_backfill gives entities of older stores theirs before a load).
// used by: ingest.loader
WITH $rel_type AS rel_type
UNWIND $rows AS row
MERGE (h:Entity {id: row.h})
ON CREATE SET h.name = row.h, h.name_norm = row.h_norm
MERGE (t:Entity {id: row.t})
ON CREATE SET t.name = row.t, t.name_norm = row.t_norm
MERGE (h)-[:$(rel_type)]->(t)
ON CREATE SET h.kgqa_degree = coalesce(h.kgqa_degree, 0) + 1, t.kgqa_degree = coalesce(t.kgqa_degree, 0) + 1
