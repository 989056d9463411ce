// embed_set_entities: stores entity embeddings and the model that made them.
// params: $model_id: string — embedder id; $rows: list<map> — {id, embedding: list<float>}
// returns: nothing
// used by: ingest.embedding
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.embedding = row.embedding, e.embedding_model = $model_id
