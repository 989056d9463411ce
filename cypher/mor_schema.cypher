// mor_schema: which node types each relationship type joins, with counts (the planner's schema).
// params: none
// returns: source_type: string, rel_type: string, target_type: string, count: int
// notes: scans every relationship once; the MoR retriever reads it once per process.
// used by: kgqa.retrieval.mor.traversal
MATCH (a:Entity)-[r]->(b:Entity)
WHERE a.type IS NOT NULL AND b.type IS NOT NULL
RETURN a.type AS source_type, type(r) AS rel_type, b.type AS target_type, count(*) AS count
ORDER BY source_type, rel_type, target_type
