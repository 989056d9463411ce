// entities_neighbours: every relationship of some entities, both directions, with what the walker needs to know of the far end.
// params: $ids: list<string> — Entity.id values to expand; $max_degree: int — skip (do not expand) entities with more relationships than this
// returns: id: string, head_id: string, r_type: string, far_id: string, far_name: string, far_type: string, far_degree: int
// notes: all of an expanded entity's relationships come back (no per-node cap), so a walk over
//        them reaches exactly what the graph holds; the degree cap is what keeps hubs out, and an
//        id that does not come back is a hub (or absent) that the caller must not walk through.
//        `head_id` tells the direction (`head_id = id`: outgoing). `far_type` is the node type
//        ingest sets (Entity.type), null where the graph has none. Only Entity-Entity triples.
// used by: retriever_training.from_graph
UNWIND $ids AS id
MATCH (f:Entity {id: id})
WHERE coalesce(f.kgqa_degree, COUNT { (f)--() }) <= $max_degree
MATCH (f)-[r]-(far:Entity)
RETURN f.id AS id, startNode(r).id AS head_id, type(r) AS r_type, far.id AS far_id,
       far.name AS far_name, far.type AS far_type,
       coalesce(far.kgqa_degree, COUNT { (far)--() }) AS far_degree
ORDER BY id, r_type, far_id, head_id
