// index_create_entity_name_norm: range index on the normalised entity name used by exact-match linking.
// params: none
// returns: nothing
// used by: kgqa.store.schema
CREATE INDEX entity_name_norm IF NOT EXISTS FOR (e:Entity) ON (e.name_norm)
