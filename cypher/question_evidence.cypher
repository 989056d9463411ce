// question_evidence: the evidence subgraph of a saved question; paste it into Neo4j Browser to see it.
// params: $id: string — question id
// returns: h_id: string, rel_type: string, t_id: string, rel_eid: string
// notes: in Browser, replace the RETURN with `RETURN h, r, t` to draw the subgraph.
// used by: kgqa.saved_questions (kgqa show)
MATCH (q:Question {id: $id})
MATCH (h)-[r]->(t)
WHERE elementId(r) IN q.evidence_rels
RETURN h.id AS h_id, type(r) AS rel_type, t.id AS t_id, elementId(r) AS rel_eid
