// embed_count_pending_entities: how many entities still need an embedding (progress bar, query-time check).
// params: $model_id: string — current embedder id
// returns: pending: int
// used by: kgqa.store.schema
MATCH (e:Entity)
WHERE e.embedding IS NULL OR e.embedding_model <> $model_id
RETURN count(e) AS pending
