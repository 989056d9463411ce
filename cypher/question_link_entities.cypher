// question_link_entities: links a saved Question to its topic or answer entities.
// params: $id: string — question id; $role: string — 'TOPIC' or 'ANSWER'; $entity_ids: list<string> — Entity.id values
// returns: nothing
// notes: the role becomes the relationship type through a dynamic type `$(role)`, as in ingest_triples.
// used by: kgqa.saved_questions (kgqa ask --save)
WITH $role AS role
MATCH (q:Question {id: $id})
UNWIND $entity_ids AS eid
MATCH (e:Entity {id: eid})
MERGE (q)-[:$(role)]->(e)
