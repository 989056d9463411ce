// index_create_vector_relation_type: vector index over relation-type embeddings.
// params: $dimensions: int — embedding size of the model; $similarity: string — 'cosine' or 'euclidean'
// returns: nothing
// notes: on kglite the adapter records the index and serves it by exact search (kgqa.store.kglite_vectors).
// used by: kgqa.store.schema
CREATE VECTOR INDEX relation_type_embedding IF NOT EXISTS
FOR (r:RelationType) ON (r.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: $similarity}}
