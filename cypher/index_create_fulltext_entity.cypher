// index_create_fulltext_entity: full-text index over entity names, for linking question spans.
// params: none
// returns: nothing
// notes: kglite full-text indexes take one property, so the index covers `name` only (not `text`).
// used by: kgqa.store.schema
CREATE FULLTEXT INDEX entity_name IF NOT EXISTS FOR (e:Entity) ON EACH [e.name]
