"""MoR (Mixture of Structural-and-Textual Retrieval) for text-rich typed graphs (PrimeKG, MAG, STaRK).

A question is answered by a typed plan (:mod:`.plan`, chosen by :mod:`.planner`), executed on the
store as a mixture of textual matching and typed traversal (:mod:`.traversal`), whose candidates
keep their trajectories and are ranked by the trajectory-aware reranker (:mod:`.reranker`);
:mod:`.retriever` ties them together.
"""
