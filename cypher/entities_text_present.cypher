// entities_text_present: whether any entity has a text (description), i.e. whether a text index can be built, and whether that entity has a type.
// params: none
// returns: present: bool, typed: bool
// notes: kglite refuses a full-text index over a property no node carries (graphs of names only).
//        `typed` reads the first entity with a text: on a graph kgqa did not ingest, the text
//        index serves MoR, whose typed plans need entity types.
// used by: kgqa.store.schema
OPTIONAL MATCH (e:Entity) WHERE e.text IS NOT NULL
WITH e LIMIT 1
RETURN e IS NOT NULL AS present, e.type IS NOT NULL AS typed
