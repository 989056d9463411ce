"""Graph I/O of retrieval: the candidate subgraph pulled from the store, and the in-process
caches of its embeddings."""
