// meta_set_mapping: records the schema mapping `kgqa prepare` prepares the graph for (its fingerprint).
// params: $mapping: string — the mapping as JSON (kgqa.store.mapping.GraphMapping.to_json)
// returns: nothing
// notes: a later prepare, embed or ask with another mapping is refused (names and vectors of the
//        old one would link wrongly); `kgqa unprepare` reads it to know what to remove.
// used by: kgqa.store.schema
MERGE (m:KgqaMeta {key: 'kgqa'})
SET m.mapping = $mapping
