// mor_text_fulltext: full-text (Lucene-syntax) search over entity texts, restricted to one type.
// params: $query: string — Lucene query, special characters escaped by the caller; $limit: int — hits fetched over all types; $label: string — the wanted type (Entity.type)
// returns: id: string, name: string, text: string, score: float
// notes: scores are backend-specific relevance values (BM25-like); compare them only within one result list.
// used by: kgqa.retrieval.mor.traversal
CALL db.index.fulltext.queryNodes('entity_text', $query, {limit: $limit}) YIELD node, score
WHERE node.type = $label
RETURN node.id AS id, node.name AS name, node.text AS text, score
