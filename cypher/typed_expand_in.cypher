// typed_expand_in: neighbours reached from a set of entities along incoming relationships of one type, restricted to one node type (MoR traversal).
// params: $source_ids: list<string> — Entity.id values; $rel_type: string — the relationship type; $label: string — the neighbours' type (Entity.type); $limit: int — cap on rows
// returns: source_id: string, rel_eid: string, target_id: string
// notes: typed_expand with the arrow reversed (see there).
// used by: kgqa.retrieval.mor.traversal
WITH $rel_type AS rel_type
MATCH (s:Entity) WHERE s.id IN $source_ids
MATCH (s)<-[r:$(rel_type)]-(n:Entity)
WHERE n.type = $label
RETURN s.id AS source_id, elementId(r) AS rel_eid, n.id AS target_id
LIMIT $limit
