// schema_constraint_question_id: makes Question.id unique, for evidence write-back.
// params: none
// returns: nothing
// used by: kgqa.store.schema
CREATE CONSTRAINT question_id IF NOT EXISTS FOR (q:Question) REQUIRE q.id IS UNIQUE
