// ingest_out_pairs: every (type, tail id) out of some entities, to know which triples exist.
// params: $ids: list<string> — Entity.id values of heavy heads
// returns: h: string, r_type: string, t: string
// notes: one walk of each head's outgoing relationships; the loader reads a heavy head once per
//        load and keeps the pairs, instead of probing its adjacency for every new row.
// used by: ingest.heavy_heads
UNWIND $ids AS id
MATCH (h:Entity {id: id})-[r]->(t:Entity)
RETURN h.id AS h, type(r) AS r_type, t.id AS t
