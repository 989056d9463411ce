"""Retrieval, by job: :mod:`~kgqa.retrieval.graph` (the candidate subgraph and embedding caches),
:mod:`~kgqa.retrieval.models` (DDE, triple scorers, planners), :mod:`~kgqa.retrieval.evidence`
(scored triples -> what a reader sees), and at the top the question's retrieval itself
(:mod:`~kgqa.retrieval.retriever`, its inputs in :mod:`~kgqa.retrieval.features`, topic
disambiguation, the weak labels eval and training share); :mod:`~kgqa.retrieval.mor` is MoR's."""
