// entities_text_present: whether any entity has a text (description), i.e. whether a text index can be built.
// params: none
// returns: present: bool
// notes: kglite refuses a full-text index over a property no node carries (graphs of names only).
// used by: kgqa.store.schema
OPTIONAL MATCH (e:Entity) WHERE e.text IS NOT NULL
WITH e LIMIT 1
RETURN e IS NOT NULL AS present
