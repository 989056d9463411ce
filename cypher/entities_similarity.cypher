// entities_similarity: cosine similarity of the given entities' embeddings to one vector, scored where the vectors are.
// params: $ids: list<string> — Entity.id values; $embedding: list<float> — the vector to compare with (the store's model)
// returns: id: string, score: float
// notes: score is on Neo4j's scale (1 + cos) / 2 in [0, 1], as the vector index's; null for an
//        entity without an embedding; missing ids are simply absent. Only the scores cross the
//        wire: a 384-dim embedding is 3.4 KB of PackStream and ~0.3 ms of pure-Python decoding,
//        a score 9 bytes (docs/decisions.md, bench.bolt_decode). kglite has no vector functions:
//        its adapter scores the vectors in process (kgqa.store.kglite_vectors).
// used by: kgqa.retrieval.mor.traversal
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, vector.similarity.cosine(e.embedding, $embedding) AS score
