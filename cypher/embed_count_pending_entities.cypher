// embed_count_pending_entities: how many entities still need an embedding, and how many kgqa cannot key (progress bar, stats).
// params: $model_id: string — current embedder id
// returns: pending: int, keyed: int, unkeyed: int
// notes: `unkeyed` entities have no id property or one that is not a string: kgqa can neither
//        write nor find them (every kernel keys an entity by its string id), so they are skipped
//        and never pending. A label scan: `kgqa ask` reads the completion flag of meta_get instead.
// used by: kgqa.store.schema
MATCH (e:Entity)
WITH e, e.id IS :: STRING NOT NULL AS keyed
RETURN count(CASE WHEN keyed AND (e.embedding IS NULL OR coalesce(e.embedding_model, '') <> $model_id) THEN 1 END) AS pending,
       count(CASE WHEN keyed THEN 1 END) AS keyed,
       count(CASE WHEN NOT keyed THEN 1 END) AS unkeyed
