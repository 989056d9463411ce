// meta_delete: removes kgqa's meta node (embedding model, mapping); the last step of `kgqa unprepare`.
// params: none
// returns: nothing
// used by: ingest.unprepare
MATCH (m:KgqaMeta)
DETACH DELETE m
