// index_drop_fulltext_entity: drops the full-text index over entity names (kgqa unprepare).
// params: none
// returns: nothing
// notes: by kgqa's name (kgqa_ prefixed on a mapped graph); an index of the user's that kgqa reused is never dropped.
// used by: ingest.unprepare
DROP INDEX entity_name IF EXISTS
