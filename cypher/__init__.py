"""The graph-side kernels: one Neo4j-dialect ``.cypher`` file per query, run by both backends.

Only ``kgqa.store.queries`` opens these files; this module exists so they ship with the package.
"""
