// ingest_triples: upserts triples of ONE relationship type, creating missing endpoint entities.
// params: $rel_type: string — a valid relationship type name; $rows: list<map> — {h, h_norm, t, t_norm}, no (h, t) twice
// returns: nothing
// notes: endpoints first seen here are named by their id until a source names them. The type is
//        applied with a dynamic type `$(rel_type)` (Neo4j 5.26+); `WITH $rel_type AS rel_type`
//        makes the same text valid in both dialects (the Neo4j adapter writes it as a literal).
//        A relationship is created only when no (h, type, t) exists yet, so a re-run creates
//        nothing; the existence probe walks the lighter end: h's outgoing relationships when
//        `kgqa_out_degree` of h is at most t's incoming count (`kgqa_degree - kgqa_out_degree`),
//        else t's incoming ones. kglite's MERGE walks every outgoing relationship of the head,
//        whatever the pattern's direction, so a head with 100k relationships made each batch
//        cost its degree. The rows must hold no (h, t) twice (the loader dedups them): the probe
//        sees the graph as it was before the statement. Not safe against a concurrent writer of
//        the same triple (MERGE would lock both ends); kgqa loads with one writer.
//        A new relationship adds one to both ends' `kgqa_degree` (a self-loop one, as
//        `COUNT { (e)--() }` counts it) and to h's `kgqa_out_degree`
//        (the hub test of subgraph_hop and the light-end choice here and in subgraph_hop's
//        slices; ingest_degrees_backfill gives entities of older stores theirs before a load).
// used by: ingest.loader
WITH $rel_type AS rel_type
UNWIND $rows AS row
MERGE (h:Entity {id: row.h})
ON CREATE SET h.name = row.h, h.name_norm = row.h_norm, h.kgqa_degree = 0, h.kgqa_out_degree = 0
MERGE (t:Entity {id: row.t})
ON CREATE SET t.name = row.t, t.name_norm = row.t_norm, t.kgqa_degree = 0, t.kgqa_out_degree = 0
WITH rel_type, h, t
WHERE CASE
        WHEN coalesce(h.kgqa_out_degree, 0) <= coalesce(t.kgqa_degree, 0) - coalesce(t.kgqa_out_degree, 0)
        THEN NOT EXISTS { (h)-[:$(rel_type)]->(t) }
        ELSE NOT EXISTS { (t)<-[:$(rel_type)]-(h) }
      END
CREATE (h)-[:$(rel_type)]->(t)
SET h.kgqa_degree = coalesce(h.kgqa_degree, 0) + 1, h.kgqa_out_degree = coalesce(h.kgqa_out_degree, 0) + 1,
    t.kgqa_degree = coalesce(t.kgqa_degree, 0) + CASE WHEN t = h THEN 0 ELSE 1 END
