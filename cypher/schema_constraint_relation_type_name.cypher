// schema_constraint_relation_type_name: makes RelationType.name unique.
// params: none
// returns: nothing
// used by: kgqa.store.schema
CREATE CONSTRAINT relation_type_name IF NOT EXISTS FOR (r:RelationType) REQUIRE r.name IS UNIQUE
