// unprepare_nodes: deletes a page of kgqa's own nodes (relation types, saved questions) with their relationships.
// params: $limit: int — nodes per transaction
// returns: nothing
// notes: DETACH DELETE also removes KGQA_TOPIC / KGQA_ANSWER links of saved questions to entities.
//        The meta node goes last (meta_delete): it records the mapping a resumed run needs.
// used by: ingest.unprepare
MATCH (n:RelationType|KgqaQuestion)
WITH n
LIMIT $limit
DETACH DELETE n
