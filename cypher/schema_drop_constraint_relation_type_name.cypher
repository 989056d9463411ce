// schema_drop_constraint_relation_type_name: drops the uniqueness constraint on relation-type names (kgqa unprepare).
// params: none
// returns: nothing
// notes: by kgqa's name (kgqa_ prefixed on a mapped graph); an index of the user's that kgqa reused is never dropped.
// used by: ingest.unprepare
DROP CONSTRAINT relation_type_name IF EXISTS
