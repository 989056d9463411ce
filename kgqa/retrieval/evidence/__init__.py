"""Evidence shaping: scored triples -> what a reader sees (pooling, reselection, ReG chains,
PathRAG flow paths, plan-guided chains) and the lines it is read as."""
