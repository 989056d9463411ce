// mor_nodes_get: type, name and text of the given entities (missing ids are simply absent).
// params: $ids: list<string> — Entity.id values
// returns: id: string, type: string, name: string, text: string
// used by: kgqa.retrieval.mor.traversal
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, e.type AS type, e.name AS name, e.text AS text
