// meta_get: the embedding model and schema version the store was built with (at most one row).
// params: none
// returns: model_id: string, dimension: int, similarity: string, schema_version: int
// used by: kgqa.store.schema
MATCH (m:KgqaMeta {key: 'kgqa'})
RETURN m.model_id AS model_id, m.dimension AS dimension, m.similarity AS similarity, m.schema_version AS schema_version
LIMIT 1
