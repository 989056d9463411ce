// ingest_entities: upserts entities that a source describes explicitly (name, optional text).
// params: $rows: list<map> — {id, name, name_norm, text}
// returns: nothing
// notes: idempotent. A changed name or text replaces the old one and drops the stale embedding, so
//        `kgqa embed` re-embeds exactly the entities whose text changed.
// used by: ingest.loader
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
ON CREATE SET e.name = row.name, e.name_norm = row.name_norm, e.text = row.text
WITH e, row
WHERE e.name <> row.name OR coalesce(e.text, '') <> coalesce(row.text, '')
SET e.name = row.name, e.name_norm = row.name_norm, e.text = row.text
REMOVE e.embedding
