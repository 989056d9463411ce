// ingest_heavy_heads: which of some entities have at least a given number of outgoing relationships.
// params: $ids: list<string> — Entity.id values (the heads of a batch); $min_out_degree: int — the threshold
// returns: id: string
// notes: reads the stored `kgqa_out_degree` (kept by ingest_triples), one index lookup per id;
//        ids with no entity yet or no stored count are not heavy.
// used by: ingest.heavy_heads
UNWIND $ids AS id
MATCH (h:Entity {id: id})
WHERE h.kgqa_out_degree >= $min_out_degree
RETURN h.id AS id
