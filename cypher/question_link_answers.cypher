// question_link_answers: links a saved KgqaQuestion to its answer entities.
// params: $id: string — question id; $entity_ids: list<string> — Entity.id values
// returns: nothing
// notes: question_link_topics with the KGQA_ANSWER type.
// used by: kgqa.saved_questions (kgqa ask --save)
MATCH (q:KgqaQuestion {id: $id})
UNWIND $entity_ids AS eid
MATCH (e:Entity {id: eid})
MERGE (q)-[:KGQA_ANSWER]->(e)
