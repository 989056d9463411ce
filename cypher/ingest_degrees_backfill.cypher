// ingest_degrees_backfill: gives every entity without a `kgqa_degree` its relationship count.
// params: none
// returns: nothing
// notes: ingest_triples keeps `kgqa_degree` up to date from there on; subgraph_hop reads it as
//        the hub test. Entities of a store loaded before the property existed, and entities a
//        source names without a triple, lack it: the loader runs this before every load. A store
//        where every entity has one scans the entities and writes nothing.
// used by: ingest.loader
MATCH (e:Entity)
WHERE e.kgqa_degree IS NULL
SET e.kgqa_degree = COUNT { (e)--() }
