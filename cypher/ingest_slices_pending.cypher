// ingest_slices_pending: ids of entities above the per-node cap whose slice is missing or stale.
// params: $max_per_node: int — the cap slices are built for (retrieval.max_per_node)
// returns: id: string
// notes: a slice is current when it was built for this cap at the entity's present degree; a load
//        that adds relationships changes the degree, an idempotent re-run does not. One scan of
//        the entities (a property read each, a count where no degree is stored).
// used by: ingest.slices
MATCH (e:Entity)
WITH e, coalesce(e.kgqa_degree, COUNT { (e)--() }) AS degree
WHERE degree > $max_per_node
  AND (e.kgqa_slice_cap IS NULL OR e.kgqa_slice_cap <> $max_per_node OR e.kgqa_slice_degree <> degree)
RETURN e.id AS id
ORDER BY id
