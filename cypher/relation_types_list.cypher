// relation_types_list: every relation type with its source name, text and embedding.
// params: none
// returns: name: string, source_name: string, text: string, embedding: list<float>
// used by: kgqa.retrieval.graph.tables, ingest.loader
MATCH (r:RelationType)
RETURN r.name AS name, r.source_name AS source_name, r.text AS text, r.embedding AS embedding
ORDER BY name
