// embed_set_relation_types: stores relation-type embeddings and the model that made them.
// params: $model_id: string — embedder id; $rows: list<map> — {name, embedding: list<float>}
// returns: nothing
// used by: ingest.embedding
UNWIND $rows AS row
MATCH (r:RelationType {name: row.name})
SET r.embedding = row.embedding, r.embedding_model = $model_id
