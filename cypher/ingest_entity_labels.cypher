// ingest_entity_labels: adds one type label (e.g. Movie, Disease) to existing entities.
// params: $label: string — a valid label name; $ids: list<string> — Entity.id values
// returns: nothing
// notes: the label comes in as a parameter and is applied with a dynamic label `$(label)` (Neo4j 5.26+);
//        `WITH $label AS label` makes the same text valid in both dialects. Entities already
//        carrying the label are skipped, so a re-run writes nothing.
// used by: ingest.loader
WITH $label AS label
UNWIND $ids AS id
MATCH (e:Entity {id: id})
WHERE NOT label IN labels(e)
SET e:$(label), e.type = label
