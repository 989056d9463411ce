// index_create_vector_relation_type: vector index over relation-type embeddings.
// params: $dimensions: int — embedding size of the model; $similarity: string — 'cosine' or 'euclidean'
// returns: nothing
// notes: kglite accepts only literals inside OPTIONS; its adapter inlines these two validated values.
// used by: kgqa.store.schema
CREATE VECTOR INDEX relation_type_embedding IF NOT EXISTS
FOR (r:RelationType) ON (r.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: $similarity}}
