// link_vector: nearest entities to an embedding.
// params: $embedding: list<float> — query vector from the store's embedding model; $k: int — number of neighbours
// returns: id: string, name: string, eid: string, score: float, degree: int
// notes: score is on Neo4j's scale (1 + cos) / 2 in [0, 1]; on kglite the adapter answers the call by exact search.
//        degree as in link_exact (the popularity prior of an acronym's reading).
// used by: kgqa.link.people, kgqa.link.search
CALL db.index.vector.queryNodes('entity_embedding', $k, $embedding) YIELD node, score
RETURN node.id AS id, node.name AS name, elementId(node) AS eid, score, coalesce(node.kgqa_degree, 0) AS degree
