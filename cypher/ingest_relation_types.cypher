// ingest_relation_types: upserts one RelationType node per relationship type, keeping the source name.
// params: $rows: list<map> — {name, source_name, text}
// returns: nothing
// notes: `name` is the relationship type in the graph; `source_name` the verbatim source relation
//        (e.g. Freebase `people.person.nationality`); `text` what gets embedded.
// used by: ingest.loader
UNWIND $rows AS row
MERGE (r:RelationType {name: row.name})
ON CREATE SET r.source_name = row.source_name, r.text = row.text
