// schema_drop_constraint_kgqa_question_id: drops the uniqueness constraint on saved question ids (kgqa unprepare).
// params: none
// returns: nothing
// notes: by kgqa's name (kgqa_ prefixed on a mapped graph); an index of the user's that kgqa reused is never dropped.
// used by: ingest.unprepare
DROP CONSTRAINT kgqa_question_id IF EXISTS
