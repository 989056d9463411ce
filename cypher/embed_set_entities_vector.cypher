// embed_set_entities_vector: stores entity embeddings as float32 vector properties (Neo4j), and the model that made them.
// params: $model_id: string — embedder id; $rows: list<map> — {id, embedding: list<float>}
// returns: nothing
// notes: Neo4j only (kglite has no such procedure; it runs embed_set_entities). A plain SET stores a
//        list of float64 (about 3 KB for 384 dims); the procedure stores float32, half of it, and
//        checks the value is a valid vector. The property name is the one string kgqa.store.mapping
//        maps inside a literal.
// used by: ingest.embedding
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
SET e.embedding_model = $model_id
