// prepare_pending_names: the next page of named entities whose name has not been normalised yet (kgqa prepare).
// params: $after: string — the last id of the previous page ('' for the first); $limit: int — page size
// returns: id: string, name: string
// notes: pages walk the string ids in order from $after (a range seek on the id index), so a run
//        reads each entity once instead of re-scanning from the start at every page; setting
//        name_norm also drops an entity from the result, so an interrupted run resumes from ''.
//        Entities without a string id are skipped (embed_count_pending_entities counts them).
//        `name` is returned as stored (any type).
// used by: ingest.prepare
MATCH (e:Entity)
WHERE e.id > $after AND e.id IS :: STRING NOT NULL AND e.name IS NOT NULL AND e.name_norm IS NULL
RETURN e.id AS id, e.name AS name
ORDER BY id
LIMIT $limit
