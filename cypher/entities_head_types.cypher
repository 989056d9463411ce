// entities_head_types: which of some relationship types each of some entities heads.
// params: $ids: list<string> — Entity.id values; $types: list<string> — relationship types to look for; $max_degree: int — skip (do not read) entities with more relationships than this
// returns: id: string, r_type: string
// notes: the kinds a Freebase-style schema gives the entities a subgraph reached but did not
//        expand (hubs, its last hop): `domain.type.property` has subjects of type
//        `domain.type` (kgqa.retrieval.models.answer_type.head_kind). Hub-safe: an entity above
//        `$max_degree` relationships (`kgqa_degree`, kept by the loader, else
//        `COUNT { (e)--() }`, which Neo4j reads from the node record) is not read, so no call
//        walks more than `$max_degree` relationships an entity. Read-only.
// used by: kgqa.retrieval.graph.kinds
UNWIND $ids AS id
MATCH (e:Entity {id: id})
WHERE coalesce(e.kgqa_degree, COUNT { (e)--() }) <= $max_degree
MATCH (e)-[r]->()
WHERE type(r) IN $types
RETURN DISTINCT e.id AS id, type(r) AS r_type
ORDER BY id, r_type
