// question_save: writes (or overwrites) a KgqaQuestion node with its answers, topic and answer ids, and evidence keys.
// params: $id: string — question id; $text: string — question text; $asked_at: string — ISO-8601 time; $answers: list<string> — answer entity ids or names; $topic_ids: list<string> — topic Entity.id values; $answer_ids: list<string> — answer Entity.id values; $evidence_heads: list<string> — head Entity.id of each evidence relationship; $evidence_types: list<string> — its relationship type; $evidence_tails: list<string> — its tail Entity.id
// returns: nothing
// notes: evidence is kept as (head id, type, tail id) keys in three aligned lists (a property
//        cannot hold a list of maps), not as elementIds, which Neo4j reuses after deletes and
//        does not keep across a store copy. Topics and answers are kept as ids too, so a saved
//        question touches no entity node unless `ask --link-entities` adds KGQA_TOPIC/KGQA_ANSWER.
// used by: kgqa.saved_questions (kgqa ask --save)
MERGE (q:KgqaQuestion {id: $id})
SET q.text = $text, q.asked_at = $asked_at, q.answers = $answers, q.topic_ids = $topic_ids,
    q.answer_ids = $answer_ids, q.evidence_heads = $evidence_heads, q.evidence_types = $evidence_types,
    q.evidence_tails = $evidence_tails
