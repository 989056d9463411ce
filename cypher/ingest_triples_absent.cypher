// ingest_triples_absent: creates triples of ONE relationship type that the loader knows are absent.
// params: $rel_type: string — a valid relationship type name; $rows: list<map> — {h, h_norm, t, t_norm}, no (h, t) twice, none already in the graph
// returns: nothing
// notes: ingest_triples without its existence probe, for rows out of a heavy head whose existing
//        (type, tail) pairs the loader read once (ingest.heavy_heads): a probe there walks the
//        smaller end's adjacency for every row, and rows between a head with 85k relationships
//        and popular tails were nearly all of a 5M-triple load. Counters as in ingest_triples.
// used by: ingest.loader
WITH $rel_type AS rel_type
UNWIND $rows AS row
MERGE (h:Entity {id: row.h})
ON CREATE SET h.name = row.h, h.name_norm = row.h_norm, h.kgqa_degree = 0, h.kgqa_out_degree = 0
MERGE (t:Entity {id: row.t})
ON CREATE SET t.name = row.t, t.name_norm = row.t_norm, t.kgqa_degree = 0, t.kgqa_out_degree = 0
WITH rel_type, h, t
CREATE (h)-[:$(rel_type)]->(t)
SET h.kgqa_degree = coalesce(h.kgqa_degree, 0) + 1, h.kgqa_out_degree = coalesce(h.kgqa_out_degree, 0) + 1,
    t.kgqa_degree = coalesce(t.kgqa_degree, 0) + CASE WHEN t = h THEN 0 ELSE 1 END
