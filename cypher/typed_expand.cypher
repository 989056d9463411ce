// typed_expand: neighbours of a set of entities through one relationship type, restricted to one node type (MoR traversal).
// params: $source_ids: list<string> — Entity.id values; $rel_type: string — the relationship type; $label: string — the neighbours' type (Entity.type); $per_source: int — cap on neighbours per source (hubs: some phenotypes have thousands of diseases)
// returns: source_id: string, rel_eid: string, outgoing: bool, target_id: string, target_name: string, target_text: string
// notes: types cannot be parameters in a pattern, so they are compared as values; both directions are
//        matched and `outgoing` says which one (the caller keeps the one its plan walks). Neighbours
//        past the cap are dropped in id order, so the cut is deterministic.
// used by: kgqa.retrieval.mor.traversal
MATCH (s:Entity) WHERE s.id IN $source_ids
MATCH (s)-[r]-(n:Entity)
WHERE type(r) = $rel_type AND n.type = $label
WITH s, r, n
ORDER BY n.id
WITH s, collect({r: r, n: n})[..$per_source] AS hits
UNWIND hits AS hit
RETURN s.id AS source_id, elementId(hit.r) AS rel_eid, startNode(hit.r) = s AS outgoing,
       hit.n.id AS target_id, hit.n.name AS target_name, hit.n.text AS target_text
