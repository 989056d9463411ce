// meta_set: records the embedding model and schema version; later runs compare against it.
// params: $model_id: string — embedder id; $dimension: int — vector size; $similarity: string — index similarity; $schema_version: int — graph model version
// returns: nothing
// used by: kgqa.store.schema
MERGE (m:KgqaMeta {key: 'kgqa'})
SET m.model_id = $model_id, m.dimension = $dimension, m.similarity = $similarity, m.schema_version = $schema_version
