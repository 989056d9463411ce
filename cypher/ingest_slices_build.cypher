// ingest_slices_build: writes each entity's slice: the far ids of its first $max_per_node triples, by direction.
// params: $ids: list<string> — Entity.id values; $max_per_node: int — the cap the slice is built for
// returns: nothing
// notes: the order is subgraph_hop's per-node order (far end's id, type, head id) over the same
//        Entity-Entity pattern; expanding an entity through its slice finds every one of those
//        first triples (and maybe more to the same far ids, which sort after them), so it gives
//        the rows of the full order for any cap up to `kgqa_slice_cap`. A far id goes to
//        `kgqa_slice_heads` when it heads one of those triples into the entity and to
//        `kgqa_slice_tails` when the entity heads one to it (a self-loop: tails), to be walked
//        from the far entity's side (its outgoing or incoming relationships), or, when that side
//        is heavier than the entity's own in that direction, to `..._via_self`, walked from the
//        entity's side. So an expansion reads the cheaper end of each pair.
//        `kgqa_slice_degree` is the degree it was built at and `kgqa_slice_rows` the number of
//        relationships between the entity and its far ids in the walked directions (what
//        subgraph_hop's slice walk finds): subgraph_hop ignores a slice once either has changed. Lists of strings, as Neo4j stores only homogeneous lists of
//        primitives. Reads every relationship of the entity once, at load time instead of per question.
// used by: ingest.slices
UNWIND $ids AS wanted
MATCH (e:Entity {id: wanted})
WITH e, coalesce(e.kgqa_degree, COUNT { (e)--() }) AS degree, coalesce(e.kgqa_out_degree, COUNT { (e)-->() }) AS e_out
CALL (e) {
  MATCH (e)-[r]-(far:Entity)
  WITH far, far.id AS far_id, type(r) AS r_type, startNode(r).id AS head_id, startNode(r) = e AS outgoing
  ORDER BY far_id, r_type, head_id
  LIMIT $max_per_node
  RETURN DISTINCT far, far_id, outgoing
}
WITH e, degree, e_out, far_id, outgoing,
     coalesce(far.kgqa_out_degree, COUNT { (far)-->() }) AS far_out, coalesce(far.kgqa_degree, COUNT { (far)--() }) AS far_degree,
     CASE WHEN outgoing THEN COUNT { (e)-->(far) } ELSE COUNT { (far)-->(e) } END AS walked
WITH e, degree, far_id, outgoing, walked,
     CASE WHEN outgoing THEN far_degree - far_out <= e_out ELSE far_out <= degree - e_out END AS from_far
WITH e, degree,
     collect(CASE WHEN NOT outgoing AND from_far THEN far_id END) AS heads,
     collect(CASE WHEN outgoing AND from_far THEN far_id END) AS tails,
     collect(CASE WHEN NOT outgoing AND NOT from_far THEN far_id END) AS heads_via_self,
     collect(CASE WHEN outgoing AND NOT from_far THEN far_id END) AS tails_via_self,
     sum(walked) AS rows
SET e.kgqa_slice_heads = heads, e.kgqa_slice_tails = tails, e.kgqa_slice_heads_via_self = heads_via_self,
    e.kgqa_slice_tails_via_self = tails_via_self, e.kgqa_slice_cap = $max_per_node, e.kgqa_slice_degree = degree,
    e.kgqa_slice_rows = rows
