// prepare_unkeyed_sample: a few entities kgqa cannot key (no id, or one that is not a string), for an error message.
// params: $limit: int — how many
// returns: id: any, name: any
// used by: ingest.prepare
MATCH (e:Entity)
WHERE NOT e.id IS :: STRING NOT NULL
RETURN e.id AS id, e.name AS name
LIMIT $limit
