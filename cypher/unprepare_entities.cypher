// unprepare_entities: removes kgqa's properties from a page of entity nodes (kgqa unprepare).
// params: $limit: int — entities per transaction
// returns: nothing
// notes: the names, vectors, model, hub slices and degrees `kgqa prepare` / `kgqa embed` wrote. The
//        embedding property is removed only where kgqa's model property is next to it (kgqa wrote
//        it). Each page drops its entities from the WHERE, so a run repeats it until a page
//        changes nothing, and an interrupted one resumes.
// used by: ingest.unprepare
MATCH (e:Entity)
WHERE e.embedding_model IS NOT NULL OR e.name_norm IS NOT NULL OR e.kgqa_slice_cap IS NOT NULL
   OR e.kgqa_slice_degree IS NOT NULL OR e.kgqa_slice_rows IS NOT NULL
   OR e.kgqa_slice_heads IS NOT NULL OR e.kgqa_slice_tails IS NOT NULL
   OR e.kgqa_slice_heads_via_self IS NOT NULL OR e.kgqa_slice_tails_via_self IS NOT NULL
   OR e.kgqa_degree IS NOT NULL OR e.kgqa_out_degree IS NOT NULL
WITH e
LIMIT $limit
FOREACH (ours IN CASE WHEN e.embedding_model IS NOT NULL THEN [1] ELSE [] END | REMOVE e.embedding)
REMOVE e.embedding_model, e.name_norm, e.kgqa_slice_cap, e.kgqa_slice_degree, e.kgqa_slice_rows,
       e.kgqa_slice_heads, e.kgqa_slice_tails, e.kgqa_slice_heads_via_self, e.kgqa_slice_tails_via_self, e.kgqa_degree,
       e.kgqa_out_degree
