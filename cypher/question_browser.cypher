// question_browser: a saved question with its topic/answer entities and evidence subgraph, drawn by Neo4j Browser.
// params: $id: string — question id
// returns: q: node, link: relationship, e: node, h: node, r: relationship, t: node
// notes: the one kernel that returns nodes and relationships instead of arrays: it is meant for
//   Neo4j Browser, which draws them (`kgqa ask --save` and `kgqa show` print it after
//   `:param id => ...;`). The evidence is matched on its saved (head id, type, tail id) keys, as in
//   question_evidence, and bounded by them (at most the reader's evidence budget).
// used by: kgqa.saved_questions (printed, and run by tests)
MATCH (q:KgqaQuestion {id: $id})
UNWIND range(0, size(q.evidence_types) - 1) AS i
MATCH (h:Entity {id: q.evidence_heads[i]})-[r]->(t:Entity {id: q.evidence_tails[i]})
WHERE type(r) = q.evidence_types[i]
OPTIONAL MATCH (q)-[link:KGQA_TOPIC|KGQA_ANSWER]->(e:Entity)
RETURN q, link, e, h, r, t
