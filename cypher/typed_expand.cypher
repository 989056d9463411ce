// typed_expand: neighbours reached from a set of entities along outgoing relationships of one type, restricted to one node type (MoR traversal).
// params: $source_ids: list<string> — Entity.id values; $rel_type: string — the relationship type; $label: string — the neighbours' type (Entity.type); $limit: int — cap on rows
// returns: source_id: string, rel_eid: string, target_id: string
// notes: the type is bound by `WITH $rel_type AS rel_type` and matched as `:$(rel_type)`; the Neo4j
//        adapter sends it as a literal type, so only relationships of that type are expanded
//        (not every relationship filtered on type(r)). Ids only: a hub phenotype has thousands
//        of diseases, and their names and texts are fetched only for the few nodes kept
//        (mor_nodes_get). The caller caps the neighbours per source.
//        typed_expand_in is the same along incoming relationships.
// used by: kgqa.retrieval.mor.traversal
WITH $rel_type AS rel_type
MATCH (s:Entity) WHERE s.id IN $source_ids
MATCH (s)-[r:$(rel_type)]->(n:Entity)
WHERE n.type = $label
RETURN s.id AS source_id, elementId(r) AS rel_eid, n.id AS target_id
LIMIT $limit
