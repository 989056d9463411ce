"""Retrieval: candidate subgraph, DDE, triple scorer (and, later, path pooling, chains, flow paths)."""
