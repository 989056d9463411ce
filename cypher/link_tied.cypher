// link_tied: which of some entities the graph ties to a topic: a relationship between them, or a neighbour in common that is no hub.
// params: $topic: string — Entity.id of the question's topic; $ids: list<string> — Entity.id values to test; $max_degree: int — a neighbour in common with more relationships than this ties nothing
// returns: id: string
// notes: how the linker tells a lone lower-case word that names a second topic ("which player in
//        tigres uanl is from mexico") from a common word that happens to be a name. Both ends are
//        looked up by Entity.id (indexed), so the planner expands from them into each other; the
//        degree test keeps a genre or a year, which shares a neighbour with half the graph, from
//        tying anything.
// used by: kgqa.link.name_step
UNWIND $ids AS id
MATCH (t:Entity {id: $topic}), (c:Entity {id: id})
WHERE EXISTS { (t)--(c) }
   OR EXISTS {
     MATCH (t)--(m:Entity)--(c)
     WHERE coalesce(m.kgqa_degree, COUNT { (m)--() }) <= $max_degree
   }
RETURN id
