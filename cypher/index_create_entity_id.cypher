// index_create_entity_id: range index on the entity id, for a graph kgqa did not ingest (kgqa prepare, embed, ask).
// params: none
// returns: nothing
// notes: kgqa's own graph gets the uniqueness constraint entity_id instead; on a user's graph kgqa
//        adds an index only, never a constraint on the user's data.
// used by: kgqa.store.schema
CREATE INDEX entity_id IF NOT EXISTS FOR (e:Entity) ON (e.id)
