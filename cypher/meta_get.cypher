// meta_get: the embedding model and schema version the store was built with (at most one row).
// params: none
// returns: model_id: string, dimension: int, similarity: string, schema_version: int, embedding_complete: bool, mapping: string
// notes: `embedding_complete` is true once an embedding run finished every keyed entity, false while
//        one runs (or after an ingest added entities), null in a store from before the flag;
//        `mapping` is the fingerprint of the schema mapping `kgqa prepare` last prepared the graph for.
// used by: kgqa.store.schema
MATCH (m:KgqaMeta {key: 'kgqa'})
RETURN m.model_id AS model_id, m.dimension AS dimension, m.similarity AS similarity, m.schema_version AS schema_version,
       m.embedding_complete AS embedding_complete, m.mapping AS mapping
LIMIT 1
