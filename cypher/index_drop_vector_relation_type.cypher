// index_drop_vector_relation_type: drops the relation-type vector index before re-embedding with another model.
// params: none
// returns: nothing
// used by: ingest.embedding (kgqa embed --reembed)
DROP INDEX relation_type_embedding IF EXISTS
