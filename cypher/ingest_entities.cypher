// ingest_entities: upserts entities that a source describes explicitly (name, optional text).
// params: $rows: list<map> — {id, name, name_norm, text}
// returns: nothing
// notes: idempotent. A changed name or text replaces the old one and drops the stale embedding, so
//        `kgqa embed` re-embeds exactly the entities whose text changed. A new entity starts with no
//        relationships (`kgqa_degree`, `kgqa_out_degree` 0; ingest_triples counts them up).
// used by: ingest.loader
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
ON CREATE SET e.name = row.name, e.name_norm = row.name_norm, e.text = row.text, e.kgqa_degree = 0,
              e.kgqa_out_degree = 0
WITH e, row
WHERE e.name <> row.name OR coalesce(e.text, '') <> coalesce(row.text, '')
SET e.name = row.name, e.name_norm = row.name_norm, e.text = row.text
REMOVE e.embedding
