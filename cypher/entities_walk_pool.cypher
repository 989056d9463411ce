// entities_walk_pool: entities a generated question may start from: every entity with at least one and at most $max_degree relationships.
// params: $max_degree: int — skip hubs with more relationships than this; $limit: int — cap on rows
// returns: id: string, name: string, degree: int
// notes: the degree is `kgqa_degree`, kept by the loader, else `COUNT { (e)--() }` (as in
//        subgraph_hop). Ordered by id, so the pool (and the seeded sample drawn from it) is the
//        same on both backends. Only Entity nodes: saved questions never start a walk.
// used by: retriever_training.from_graph
MATCH (e:Entity)
WITH e, coalesce(e.kgqa_degree, COUNT { (e)--() }) AS degree
WHERE degree >= 1 AND degree <= $max_degree
RETURN e.id AS id, e.name AS name, degree
ORDER BY id
LIMIT $limit
