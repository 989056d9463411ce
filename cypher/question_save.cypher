// question_save: writes (or overwrites) a Question node with its answers and evidence relationship ids.
// params: $id: string — question id; $text: string — question text; $asked_at: string — ISO-8601 time; $answers: list<string> — answer entity ids or names; $evidence_rels: list<string> — elementIds of evidence relationships
// returns: nothing
// used by: kgqa.saved_questions (kgqa ask --save)
MERGE (q:Question {id: $id})
SET q.text = $text, q.asked_at = $asked_at, q.answers = $answers, q.evidence_rels = $evidence_rels
