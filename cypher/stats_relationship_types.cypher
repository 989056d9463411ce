// stats_relationship_types: every relationship type in the database.
// params: none
// returns: type: string
// notes: counts come from stats_relationship_type_count, one type at a time, never from a scan
//        of all relationships.
// used by: kgqa.store.stats (kgqa stats), ingest.prepare
CALL db.relationshipTypes() YIELD relationshipType
RETURN relationshipType AS type
ORDER BY type
