// ingest_progress_get: how far an earlier ingest of the same source got (resume point).
// params: $source_key: string — fingerprint of format + file contents
// returns: lines_done: int, complete: bool, source: string
// used by: ingest.loader
MATCH (p:KgqaIngest {source_key: $source_key})
RETURN p.lines_done AS lines_done, p.complete AS complete, p.source AS source
LIMIT 1
