// schema_constraint_kgqa_question_id: makes KgqaQuestion.id unique, for evidence write-back.
// params: none
// returns: nothing
// notes: the label and the constraint name carry kgqa's prefix, so neither can meet a user's own
//        :Question nodes or question_id constraint.
// used by: kgqa.store.schema
CREATE CONSTRAINT kgqa_question_id IF NOT EXISTS FOR (q:KgqaQuestion) REQUIRE q.id IS UNIQUE
