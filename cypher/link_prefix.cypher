// link_prefix: entities whose normalised name starts with a word stem, most connected first.
// params: $prefix: string — a stem, normalised like Entity.name_norm; $limit: int — cap on rows
// returns: id: string, name: string, eid: string, name_norm: string, degree: int
// notes: how the linker finds a place from its demonym ("jamaican" -> stem "jama" -> Jamaica);
//        STARTS WITH uses the name_norm index on Neo4j, a scan on kglite.
// used by: kgqa.link.people
MATCH (e:Entity)
WHERE e.name_norm STARTS WITH $prefix
RETURN e.id AS id, e.name AS name, elementId(e) AS eid, e.name_norm AS name_norm, coalesce(e.kgqa_degree, 0) AS degree
ORDER BY degree DESC, id
LIMIT $limit
