// link_exact: entities whose normalised name equals one of the given normalised mentions.
// params: $names_norm: list<string> — mentions normalised like Entity.name_norm; $limit: int — cap on rows per name
// returns: id: string, name: string, eid: string, name_norm: string, degree: int
// notes: the cap is per name, first by Entity.id, so a name shared by thousands of entities
//        (a tag, a year) cannot crowd out the other n-grams, and both backends keep the same rows.
//        degree is the entity's relationship count (0 where a mapped graph has no kgqa_degree):
//        the linker's popularity prior.
// used by: kgqa.link.exact
UNWIND $names_norm AS wanted
CALL (wanted) {
  MATCH (e:Entity {name_norm: wanted})
  RETURN e
  ORDER BY e.id
  LIMIT $limit
}
RETURN e.id AS id, e.name AS name, elementId(e) AS eid, e.name_norm AS name_norm, coalesce(e.kgqa_degree, 0) AS degree
