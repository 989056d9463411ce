// prepare_pending_names: a page of named entities whose name has not been normalised yet (kgqa prepare).
// params: $limit: int — page size
// returns: id: string, name: string
// notes: setting name_norm removes an entity from this result, so paging needs no offset and an
//        interrupted run resumes where it stopped. `id` is returned as stored, so the caller can
//        reject ids that are not strings.
// used by: ingest.prepare
MATCH (e:Entity)
WHERE e.name IS NOT NULL AND e.id IS NOT NULL AND e.name_norm IS NULL
RETURN e.id AS id, e.name AS name
LIMIT $limit
