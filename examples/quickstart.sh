#!/usr/bin/env bash
# Quick start on the embedded store, no server: install kgqa, load the bundled MetaQA slice
# (2,951 real triples about 200 films) with embeddings and indexes, show what was loaded, look an
# entity up, train a small retriever on 294 real MetaQA questions about the slice, and answer a
# question: the extractive reader answers from ReG evidence chains (best last), the answer and its
# evidence are saved to the store, and the Cypher to draw that evidence in Neo4j Browser is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install -q -e .
kgqa ingest examples/metaqa_movies/kb.txt --format metaqa
kgqa stats
echo
echo "== full-text lookup: 'cast away' =="
kgqa cypher cypher/link_fulltext.cypher -p query='cast away' -p limit=3
echo
echo "== facts around 'Cast Away' (one hop, both directions; elementIds open in Neo4j Browser) =="
kgqa cypher cypher/subgraph_hop.cypher -p 'frontier_ids=["Cast Away"]' -p max_degree=1000 -p max_per_node=1000 -p max_triples=50
echo
echo "== train the triple scorer and extractive reader (about 20 seconds on one thread) =="
[ -f kgqa-data/retriever.pt ] || kgqa train examples/metaqa_movies/questions.txt --format metaqa --set train.epochs=10
echo
echo "== kgqa ask: which films did Robert Zemeckis direct? (evidence chains, best last; saved) =="
kgqa ask "which films did Robert Zemeckis direct" --set answer.organisation=chains --set answer.evidence_k=30 --save
