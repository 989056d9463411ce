// schema_constraint_entity_id: makes Entity.id unique (and indexed), so MERGE on it is idempotent and fast.
// params: none
// returns: nothing
// used by: kgqa.store.schema
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE
