// index_create_fulltext_entity_text: full-text index over entity texts (descriptions), for MoR's textual matching.
// params: none
// returns: nothing
// notes: kglite full-text indexes take one property, so names have their own index (entity_name).
// used by: kgqa.store.schema
CREATE FULLTEXT INDEX entity_text IF NOT EXISTS FOR (e:Entity) ON EACH [e.text]
