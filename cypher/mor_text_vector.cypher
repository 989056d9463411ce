// mor_text_vector: entities of one type nearest to an embedding of a text restriction.
// params: $embedding: list<float> — query vector from the store's embedding model; $k: int — neighbours fetched over all types; $label: string — the wanted type (Entity.type)
// returns: id: string, name: string, text: string, score: float
// notes: score is on Neo4j's scale (1 + cos) / 2 in [0, 1]. The vector index covers all entities
//        (embedded from name and text), so $k must exceed the wanted count by the other types' share.
// used by: kgqa.retrieval.mor.traversal
CALL db.index.vector.queryNodes('entity_embedding', $k, $embedding) YIELD node, score
WHERE node.type = $label
RETURN node.id AS id, node.name AS name, node.text AS text, score
