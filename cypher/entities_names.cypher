// entities_names: names of the given entities (missing ids are simply absent), without their embeddings.
// params: $ids: list<string> — Entity.id values
// returns: id: string, name: string
// notes: for callers that need a name or whether an id exists (topic and bracket linking, eval's
//        answer-in-KG check): entities_get also returns each embedding, 3.4 KB of PackStream over
//        Bolt at 384 dims (docs/decisions.md, bench.bolt_decode).
// used by: kgqa.link.explicit, kgqa.eval.run
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, e.name AS name
