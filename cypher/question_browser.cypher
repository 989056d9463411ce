// question_browser: a saved question with its topic/answer entities and evidence subgraph, drawn by Neo4j Browser.
// params: $id: string — question id
// returns: q: node, link: relationship, e: node, h: node, r: relationship, t: node
// notes: the one kernel that returns nodes and relationships instead of arrays: it is meant for
//   Neo4j Browser, which draws them (`kgqa ask --save` and `kgqa show` print it with `:param id => ...`).
//   Bounded by the saved evidence list (at most the reader's evidence budget of relationships).
// used by: kgqa.saved_questions (printed, and run by tests)
MATCH (q:Question {id: $id})
MATCH (h:Entity)-[r]->(t:Entity)
WHERE elementId(r) IN q.evidence_rels
OPTIONAL MATCH (q)-[link]->(e:Entity)
RETURN q, link, e, h, r, t
