// link_fulltext: full-text (Lucene-syntax) search over entity names.
// params: $query: string — Lucene query, special characters escaped by the caller; $limit: int — cap on rows
// returns: id: string, name: string, eid: string, score: float, degree: int
// notes: scores are backend-specific relevance values (BM25-like), higher is better; compare them
//        only within one result list. degree as in link_exact.
// used by: kgqa.link.fuzzy, kgqa.link.people, kgqa.link.search
CALL db.index.fulltext.queryNodes('entity_name', $query, {limit: $limit}) YIELD node, score
RETURN node.id AS id, node.name AS name, elementId(node) AS eid, score, coalesce(node.kgqa_degree, 0) AS degree
