// question_get: a saved question with its answers and the evidence relationships as triples.
// params: $id: string — question id
// returns: id: string, text: string, asked_at: string, answers: list<string>, evidence_rels: list<string>
// used by: kgqa.saved_questions (kgqa show)
MATCH (q:Question {id: $id})
RETURN q.id AS id, q.text AS text, q.asked_at AS asked_at, q.answers AS answers, q.evidence_rels AS evidence_rels
