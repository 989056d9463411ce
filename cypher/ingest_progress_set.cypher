// ingest_progress_set: records the resume point, in the same transaction as the batch it follows.
// params: $source_key: string — fingerprint of format + file contents; $source: string — path as given; $lines_done: int — last line fully written; $complete: bool — whole source written
// returns: nothing
// used by: ingest.loader
MERGE (p:KgqaIngest {source_key: $source_key})
SET p.source = $source, p.lines_done = $lines_done, p.complete = $complete
