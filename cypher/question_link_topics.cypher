// question_link_topics: links a saved KgqaQuestion to its topic entities.
// params: $id: string — question id; $entity_ids: list<string> — Entity.id values
// returns: nothing
// notes: a literal relationship type (no dynamic `$(role)`), so MERGE checks one type only.
// used by: kgqa.saved_questions (kgqa ask --save)
MATCH (q:KgqaQuestion {id: $id})
UNWIND $entity_ids AS eid
MATCH (e:Entity {id: eid})
MERGE (q)-[:KGQA_TOPIC]->(e)
