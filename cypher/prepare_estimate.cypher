// prepare_estimate: what `kgqa prepare` would find on the entity label, for `kgqa prepare --dry-run` (reads only).
// params: none
// returns: entities: int, keyed: int, names_pending: int, name_chars: float, id_chars: float
// notes: one scan of the label. `keyed`: entities with a string id (the others are skipped);
//        `names_pending`: keyed, named entities without a normalised name yet; `name_chars` and
//        `id_chars`: the mean length of string names and ids (null when there is none).
// used by: ingest.prepare_plan
MATCH (e:Entity)
WITH e, e.id IS :: STRING NOT NULL AS keyed
RETURN count(e) AS entities,
       count(CASE WHEN keyed THEN 1 END) AS keyed,
       count(CASE WHEN keyed AND e.name IS NOT NULL AND e.name_norm IS NULL THEN 1 END) AS names_pending,
       avg(CASE WHEN e.name IS :: STRING NOT NULL THEN size(e.name) END) AS name_chars,
       avg(CASE WHEN keyed THEN size(e.id) END) AS id_chars
