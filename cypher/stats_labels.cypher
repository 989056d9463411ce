// stats_labels: node count per label.
// params: none
// returns: label: string, count: int
// notes: scans all nodes; on a large Neo4j database prefer the count store via Browser's :sysinfo.
// used by: kgqa.store.stats (kgqa stats)
MATCH (n)
UNWIND labels(n) AS label
RETURN label, count(*) AS count
ORDER BY label
