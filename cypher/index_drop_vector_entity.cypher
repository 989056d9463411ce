// index_drop_vector_entity: drops the entity vector index before re-embedding with another model.
// params: none
// returns: nothing
// used by: ingest.embedding (kgqa embed --reembed)
DROP INDEX entity_embedding IF EXISTS
