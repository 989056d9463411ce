// embed_pending_relation_types: relation types that still need an embedding (no vector, or another model's).
// params: $model_id: string — current embedder id; $limit: int — page size
// returns: name: string, text: string
// used by: ingest.embedding
MATCH (r:RelationType)
WHERE r.embedding IS NULL OR r.embedding_model <> $model_id
RETURN r.name AS name, r.text AS text
LIMIT $limit
