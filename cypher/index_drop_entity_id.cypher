// index_drop_entity_id: drops the entity id lookup index (kgqa unprepare).
// params: none
// returns: nothing
// notes: by kgqa's name (kgqa_ prefixed on a mapped graph); an index of the user's that kgqa reused is never dropped.
// used by: ingest.unprepare
DROP INDEX entity_id IF EXISTS
