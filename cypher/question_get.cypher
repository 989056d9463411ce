// question_get: a saved question with its answers.
// params: $id: string — question id
// returns: id: string, text: string, asked_at: string, answers: list<string>
// used by: kgqa.saved_questions (kgqa show)
MATCH (q:KgqaQuestion {id: $id})
RETURN q.id AS id, q.text AS text, q.asked_at AS asked_at, q.answers AS answers
