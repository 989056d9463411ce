// embed_pending_entities: a page of entities that still need an embedding (no vector, or another model's).
// params: $model_id: string — current embedder id; $limit: int — page size
// returns: id: string, name: string, text: string
// notes: setting the embedding removes an entity from this result, so paging needs no offset and an
//        interrupted embedding run resumes where it stopped. Only entities with a string id are
//        returned: the setter finds an entity by its id, so one without (or with a number) would
//        come back on every page and never be written (embed_count_pending_entities counts them
//        as `unkeyed`). `name` and `text` are returned as stored (any type).
// used by: ingest.embedding
MATCH (e:Entity)
WHERE e.id IS :: STRING NOT NULL AND (e.embedding IS NULL OR coalesce(e.embedding_model, '') <> $model_id)
RETURN e.id AS id, e.name AS name, e.text AS text
LIMIT $limit
