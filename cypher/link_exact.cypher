// link_exact: entities whose normalised name equals one of the given normalised mentions.
// params: $names_norm: list<string> — mentions normalised like Entity.name_norm; $limit: int — cap on rows
// returns: id: string, name: string, eid: string, name_norm: string
// used by: kgqa.link
MATCH (e:Entity) WHERE e.name_norm IN $names_norm
RETURN e.id AS id, e.name AS name, elementId(e) AS eid, e.name_norm AS name_norm
LIMIT $limit
