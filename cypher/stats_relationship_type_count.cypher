// stats_relationship_type_count: how many relationships have one type.
// params: $rel_type: string — a type from stats_relationship_types
// returns: count: int
// notes: the Neo4j adapter sends the type as a literal (kgqa.store.neo4j_store), so the count is
//        read from the count store instead of a scan; kglite runs the dynamic type.
// used by: kgqa.store.stats (kgqa stats)
WITH $rel_type AS rel_type
MATCH ()-[r:$(rel_type)]->()
RETURN count(r) AS count
