// entities_get: names, texts and embeddings of the given entities (missing ids are simply absent).
// params: $ids: list<string> — Entity.id values
// returns: id: string, name: string, text: string, embedding: list<float>
// used by: kgqa.retrieval.graph.tables
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, e.name AS name, e.text AS text, e.embedding AS embedding
