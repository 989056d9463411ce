// subgraph_hop: one hop of topic-centred subgraph extraction: triples incident to the frontier, both directions.
// params: $frontier_ids: list<string> — Entity.id values to expand, in the order the budget is spent; $max_degree: int — skip (do not expand) entities with more relationships than this; null expands every one (the topics); $max_per_node: int — cap on triples per frontier entity; $max_triples: int — cap on triples returned
// returns: h_ids: list<string>, r_types: list<string>, t_ids: list<string>, r_eids: list<string>
// notes: the k-hop loop lives in kgqa.retrieval.graph.subgraph: it calls this kernel per hop with the
//        new frontier (in position order, a chunk at a time, until the budget is spent), so
//        neither backend enumerates paths and a hub can never pull in the whole KB.
//        Hub-safe and deterministic, so kglite and Neo4j return the same triples:
//        - the degree is `kgqa_degree`, kept by the loader, else `COUNT { (f)--() }`, which Neo4j
//          reads from the node record (no label on the far node: a label makes it walk every
//          relationship). Topics (`$max_degree` null) skip the test.
//        - each entity keeps its first `$max_per_node` triples by (far end's id, type, head id),
//          a total order since the loader never doubles a (head, type, tail); then the first
//          `$max_triples` rows by (frontier position, the same key). A triple between two frontier
//          entities can come back twice; the caller drops the second.
//        - the first branch of the CALL orders every relationship of the entity, so a hub topic
//          would cost its degree. An entity with a current slice (ingest_slices_build: the far
//          ids of its first `kgqa_slice_cap` triples in this order, by direction, built at
//          `kgqa_slice_degree` relationships) for a cap of at least `$max_per_node` takes the
//          second branch instead (the two conditions are exact complements): each far entity
//          is found by its id first (an index seek; a WITH closes that match), so both ends
//          are bound before the relationship is matched (Neo4j plans Expand(Into), never
//          Expand(All) from the hub), and the relationships between the two are walked from
//          the far entity's side in one direction, or, for the few far ids heavier on that side, from
//          the entity's side (a walk with both ends bound checks the far end natively; a filter
//          such as `far.id IN list` costs about ten times more per relationship). The work is bounded
//          by the cap and the lighter ends, not the degree, and the rows are those of the full
//          order: every triple within the cap is found, and whatever else is found goes to the
//          same far ids and sorts after it. A slice is checked by content as well as by degree:
//          a first pass counts what its walk finds, which must be the `kgqa_slice_rows`
//          relationships the slice held when built, so a fact to a sliced far end deleted or added
//          on a live graph (a swap keeps the degree) sends the entity down the full order instead
//          (correct, at its degree's cost) until the slice is rebuilt (ingest_slices_pending lists
//          it). A slice built before the count (no `kgqa_slice_rows`) is trusted by degree alone.
//          The count walks the slice a first time (cap index seeks, for sliced entities only);
//          the walk's rows are not carried on as a list because kglite unwinds a list passed
//          into a CALL about 40 times slower than it walks (docs/decisions.md).
//        Only Entity-Entity triples count: saved (:KgqaQuestion) links never enter a subgraph.
//        Arrays, not paths, come back: index i of each list is one triple (head, type, tail, elementId).
// used by: kgqa.retrieval.graph.subgraph
UNWIND range(0, size($frontier_ids) - 1) AS position
MATCH (f:Entity {id: $frontier_ids[position]})
WHERE $max_degree IS NULL OR coalesce(f.kgqa_degree, COUNT { (f)--() }) <= $max_degree
CALL (f) {
  WITH f
  WHERE f.kgqa_slice_cap IS NULL OR f.kgqa_slice_cap < $max_per_node
     OR f.kgqa_slice_degree <> coalesce(f.kgqa_degree, COUNT { (f)--() })
  MATCH (f)-[r]-(far:Entity)
  WITH r, far.id AS far_id, type(r) AS r_type, startNode(r).id AS head_id
  ORDER BY far_id, r_type, head_id
  LIMIT $max_per_node
  RETURN r, far_id, r_type, head_id
  UNION ALL
  WITH f
  WHERE f.kgqa_slice_cap >= $max_per_node AND f.kgqa_slice_degree = coalesce(f.kgqa_degree, COUNT { (f)--() })
  CALL (f) {
    CALL (f) {
      UNWIND f.kgqa_slice_heads AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (far)-[r]->(f)
      RETURN r, far_id
      UNION ALL
      UNWIND f.kgqa_slice_tails AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (far)<-[r]-(f)
      RETURN r, far_id
      UNION ALL
      UNWIND f.kgqa_slice_heads_via_self AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (f)<-[r]-(far)
      RETURN r, far_id
      UNION ALL
      UNWIND f.kgqa_slice_tails_via_self AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (f)-[r]->(far)
      RETURN r, far_id
    }
    RETURN count(r) AS walked
  }
  CALL (f, walked) {
    WITH f, walked
    WHERE walked = coalesce(f.kgqa_slice_rows, walked)
    CALL (f) {
      UNWIND f.kgqa_slice_heads AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (far)-[r]->(f)
      RETURN r, far_id
      UNION ALL
      UNWIND f.kgqa_slice_tails AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (far)<-[r]-(f)
      RETURN r, far_id
      UNION ALL
      UNWIND f.kgqa_slice_heads_via_self AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (f)<-[r]-(far)
      RETURN r, far_id
      UNION ALL
      UNWIND f.kgqa_slice_tails_via_self AS far_id
      MATCH (far:Entity {id: far_id})
      WITH f, far, far_id
      MATCH (f)-[r]->(far)
      RETURN r, far_id
    }
    WITH r, far_id, type(r) AS r_type, startNode(r).id AS head_id
    ORDER BY far_id, r_type, head_id
    LIMIT $max_per_node
    RETURN r, far_id, r_type, head_id
    UNION ALL
    WITH f, walked
    WHERE walked <> coalesce(f.kgqa_slice_rows, walked)
    MATCH (f)-[r]-(far:Entity)
    WITH r, far.id AS far_id, type(r) AS r_type, startNode(r).id AS head_id
    ORDER BY far_id, r_type, head_id
    LIMIT $max_per_node
    RETURN r, far_id, r_type, head_id
  }
  RETURN r, far_id, r_type, head_id
}
WITH position, r, far_id, r_type, head_id
ORDER BY position, far_id, r_type, head_id
LIMIT $max_triples
RETURN collect(startNode(r).id) AS h_ids, collect(r_type) AS r_types,
       collect(endNode(r).id) AS t_ids, collect(elementId(r)) AS r_eids
