// question_save: writes (or overwrites) a KgqaQuestion node with its answers and evidence keys.
// params: $id: string — question id; $text: string — question text; $asked_at: string — ISO-8601 time; $answers: list<string> — answer entity ids or names; $evidence_heads: list<string> — head Entity.id of each evidence relationship; $evidence_types: list<string> — its relationship type; $evidence_tails: list<string> — its tail Entity.id
// returns: nothing
// notes: evidence is kept as (head id, type, tail id) keys in three aligned lists (a property
//        cannot hold a list of maps), not as elementIds, which Neo4j reuses after deletes and
//        does not keep across a store copy.
// used by: kgqa.saved_questions (kgqa ask --save)
MERGE (q:KgqaQuestion {id: $id})
SET q.text = $text, q.asked_at = $asked_at, q.answers = $answers,
    q.evidence_heads = $evidence_heads, q.evidence_types = $evidence_types, q.evidence_tails = $evidence_tails
