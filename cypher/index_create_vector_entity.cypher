// index_create_vector_entity: vector index over entity embeddings.
// params: $dimensions: int — embedding size of the model; $similarity: string — 'cosine' or 'euclidean'
// returns: nothing
// notes: on kglite the adapter records the index and serves it by exact search (kgqa.store.kglite_vectors).
// used by: kgqa.store.schema
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS
FOR (e:Entity) ON (e.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: $similarity}}
