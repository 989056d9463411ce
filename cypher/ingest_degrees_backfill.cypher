// ingest_degrees_backfill: gives every entity without stored degrees its relationship counts.
// params: none
// returns: nothing
// notes: `kgqa_degree` counts all of an entity's relationships, `kgqa_out_degree` the outgoing
//        ones. ingest_triples and ingest_entities keep both up to date from there on;
//        subgraph_hop reads them (hub test, slice expansion) and ingest_triples picks its
//        existence probe's end with them. Entities of a store loaded before a property existed
//        lack it: the loader runs this before every load. A store where every entity has both
//        scans the entities and writes nothing.
// used by: ingest.loader
MATCH (e:Entity)
WHERE e.kgqa_degree IS NULL OR e.kgqa_out_degree IS NULL
SET e.kgqa_degree = COUNT { (e)--() }, e.kgqa_out_degree = COUNT { (e)-->() }
