// question_evidence: the evidence relationships of a saved question that are still in the graph, in saved order.
// params: $id: string — question id
// returns: rank: int, h_id: string, rel_type: string, t_id: string
// notes: each saved (head id, type, tail id) key binds both entities first (two index seeks; the
//        WITH closes the match so the planner cannot expand from one of them), then matches the
//        relationship between them (Expand(Into)), so a hub end never has its
//        relationships read one by one; a key whose relationship was deleted since is absent.
// used by: kgqa.saved_questions (kgqa show)
MATCH (q:KgqaQuestion {id: $id})
UNWIND range(0, size(q.evidence_types) - 1) AS rank
MATCH (h:Entity {id: q.evidence_heads[rank]})
MATCH (t:Entity {id: q.evidence_tails[rank]})
WITH q, rank, h, t
MATCH (h)-[r]->(t)
WHERE type(r) = q.evidence_types[rank]
RETURN DISTINCT rank, h.id AS h_id, type(r) AS rel_type, t.id AS t_id
ORDER BY rank
