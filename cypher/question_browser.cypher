// question_browser: a saved question with its topic/answer entities and evidence subgraph, drawn by Neo4j Browser.
// params: $id: string — question id
// returns: q: node, entities: list<node>, evidence: list<relationship>
// notes: the one kernel that returns nodes and relationships instead of arrays: it is meant for
//   Neo4j Browser, which draws them (`kgqa ask --save` and `kgqa show` print it after
//   `:param id => ...;`). One statement and one row, so Browser's row limit cuts nothing, and the
//   topics and answers are drawn even when no evidence relationship is left. Each evidence key
//   binds both ends by index seeks before the relationship between them is matched, as in
//   question_evidence; it is bounded by the saved keys (the reader's evidence budget).
// used by: kgqa.saved_questions (printed, and run by tests)
MATCH (q:KgqaQuestion {id: $id})
CALL (q) {
  UNWIND range(0, size(q.evidence_types) - 1) AS i
  MATCH (h:Entity {id: q.evidence_heads[i]})
  MATCH (t:Entity {id: q.evidence_tails[i]})
  WITH q, i, h, t
  MATCH (h)-[r]->(t)
  WHERE type(r) = q.evidence_types[i]
  RETURN collect(DISTINCT r) AS evidence, collect(DISTINCT h) + collect(DISTINCT t) AS endpoints
}
CALL (q) {
  UNWIND coalesce(q.topic_ids, []) + coalesce(q.answer_ids, []) AS marked_id
  MATCH (e:Entity {id: marked_id})
  RETURN collect(DISTINCT e) AS marked
}
RETURN q, endpoints + marked AS entities, evidence
