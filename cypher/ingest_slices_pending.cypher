// ingest_slices_pending: ids of entities above the per-node cap whose slice is missing or stale.
// params: $max_per_node: int — the cap slices are built for (retrieval.max_per_node)
// returns: id: string
// notes: a slice is current when it was built for this cap at the entity's present degree and
//        its far ids still hold the `kgqa_slice_rows` relationships they held then (counted the
//        way subgraph_hop walks them); a load that adds relationships changes the degree, an
//        idempotent re-run does not, and a fact swapped on a live graph (one deleted, one added)
//        changes the count when either touches a sliced far id. One scan of the entities (a
//        property read each, a count where no degree is stored), and for each hub one index seek
//        per sliced far id. A slice built before the count (no `kgqa_slice_rows`) is stale.
// used by: ingest.slices
MATCH (e:Entity)
WITH e, coalesce(e.kgqa_degree, COUNT { (e)--() }) AS degree
WHERE degree > $max_per_node
CALL (e) {
  UNWIND coalesce(e.kgqa_slice_heads, []) + coalesce(e.kgqa_slice_heads_via_self, []) AS far_id
  MATCH (far:Entity {id: far_id})
  WITH COUNT { (far)-->(e) } AS walked
  RETURN sum(walked) AS walked
  UNION ALL
  UNWIND coalesce(e.kgqa_slice_tails, []) + coalesce(e.kgqa_slice_tails_via_self, []) AS far_id
  MATCH (far:Entity {id: far_id})
  WITH COUNT { (e)-->(far) } AS walked
  RETURN sum(walked) AS walked
}
WITH e, degree, sum(walked) AS rows
WHERE e.kgqa_slice_cap IS NULL OR e.kgqa_slice_cap <> $max_per_node OR e.kgqa_slice_degree <> degree
   OR e.kgqa_slice_rows IS NULL OR e.kgqa_slice_rows <> rows
RETURN e.id AS id
ORDER BY id
