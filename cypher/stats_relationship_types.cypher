// stats_relationship_types: relationship count per type.
// params: none
// returns: type: string, count: int
// used by: kgqa.store.stats (kgqa stats)
MATCH ()-[r]->()
RETURN type(r) AS type, count(*) AS count
ORDER BY type
