// embed_foreign_vectors: values in the embedding property that kgqa did not write (no model recorded next to them).
// params: $limit: int — how many to show
// returns: id: any, value: any
// notes: kgqa writes its vectors into the mapped embedding property and the model next to it;
//        a value there without the model is the user's (strings, another model's vectors), which
//        kgqa refuses to overwrite or to search. Entities are scanned until $limit are found.
// used by: ingest.embedding
MATCH (e:Entity)
WHERE e.embedding IS NOT NULL AND e.embedding_model IS NULL
RETURN e.id AS id, e.embedding AS value
LIMIT $limit
