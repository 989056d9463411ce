// typed_expand: neighbours of a set of entities restricted by node label and relationship type (MoR traversal).
// params: $source_ids: list<string> — Entity.id values; $labels: list<string> — allowed neighbour labels, [] for any; $rel_types: list<string> — allowed relationship types, [] for any; $limit: int — cap on rows
// returns: source_id: string, rel_type: string, rel_eid: string, outgoing: bool, target_id: string, target_name: string
// notes: labels and types cannot be parameters in a pattern, so they are filtered with IN.
// used by: nothing yet; planned: kgqa.retrieval.mor (MoR mixed traversal, see ARCHITECTURE.md)
MATCH (s:Entity) WHERE s.id IN $source_ids
MATCH (s)-[r]-(n:Entity)
WHERE (size($rel_types) = 0 OR type(r) IN $rel_types)
  AND (size($labels) = 0 OR any(l IN labels(n) WHERE l IN $labels))
RETURN s.id AS source_id, type(r) AS rel_type, elementId(r) AS rel_eid,
       startNode(r) = s AS outgoing, n.id AS target_id, n.name AS target_name
LIMIT $limit
