// subgraph_hop: one hop of topic-centred subgraph extraction: triples incident to the frontier, both directions.
// params: $frontier_ids: list<string> — Entity.id values to expand; $max_degree: int — skip (do not expand) entities with more relationships than this; $max_triples: int — cap on triples returned
// returns: h_ids: list<string>, r_types: list<string>, t_ids: list<string>, r_eids: list<string>
// notes: the k-hop loop lives in kgqa.retrieval.subgraph: it calls this kernel once per hop with the
//        new frontier, so neither backend enumerates paths and a hub can never pull in the whole KB.
//        Only Entity-Entity triples count: saved (:Question) links never enter a subgraph.
//        Arrays, not paths, come back: index i of each list is one triple (head, type, tail, elementId).
// used by: kgqa.retrieval.subgraph
UNWIND $frontier_ids AS fid
MATCH (f:Entity {id: fid})
WHERE COUNT { (f)--(:Entity) } <= $max_degree
MATCH (f)-[r]-(:Entity)
WITH DISTINCT r
LIMIT $max_triples
RETURN collect(startNode(r).id) AS h_ids, collect(type(r)) AS r_types,
       collect(endNode(r).id) AS t_ids, collect(elementId(r)) AS r_eids
