// paths_shortest: all shortest undirected paths (up to 4 hops) between two entity sets.
// params: $source_ids: list<string> — Entity.id values; $target_ids: list<string> — Entity.id values; $max_hops: int — keep paths of at most this length (<= 4); $limit: int — cap on paths
// returns: node_ids: list<string>, rel_types: list<string>, rel_eids: list<string>
// notes: Neo4j forbids parameters in hop bounds, so the pattern is bounded by the literal 4 and
//        filtered with length(p) <= $max_hops. Paths through saved (:Question) nodes are excluded:
//        Neo4j applies that WHERE during the search; kglite applies it after, so there a pair whose
//        only shortest path runs through a Question yields no path. Weak labels are computed on the
//        extracted subgraph (Entity-only) for that reason. Used for weak labels (topic -> answer paths).
// used by: retriever_training.labels
MATCH (a:Entity) WHERE a.id IN $source_ids
MATCH (b:Entity) WHERE b.id IN $target_ids AND a <> b
MATCH p = allShortestPaths((a)-[*..4]-(b))
WHERE all(n IN nodes(p) WHERE n:Entity)
WITH p WHERE length(p) <= $max_hops
WITH p LIMIT $limit
RETURN [n IN nodes(p) | n.id] AS node_ids, [r IN relationships(p) | type(r)] AS rel_types,
       [r IN relationships(p) | elementId(r)] AS rel_eids
