// prepare_set_names: stores normalised names, the one entity property exact-match linking reads.
// params: $rows: list<map> — {id, name_norm}
// returns: nothing
// used by: ingest.prepare
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.name_norm = row.name_norm
