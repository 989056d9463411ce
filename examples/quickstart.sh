#!/usr/bin/env bash
# Quick start on the embedded store, no server: install kgqa, load the bundled MetaQA slice
# (2,951 real triples about 200 films) with embeddings and indexes, show what was loaded, then
# look an entity up and print the facts around it with their relationship element ids.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install -q -e .
kgqa ingest examples/metaqa_movies/kb.txt --format metaqa
kgqa stats
echo
echo "== full-text lookup: 'cast away' =="
kgqa cypher cypher/link_fulltext.cypher -p query='cast away' -p limit=3
echo
echo "== evidence around 'Cast Away' (one hop, both directions; elementIds open in Neo4j Browser) =="
kgqa cypher cypher/subgraph_hop.cypher -p 'frontier_ids=["Cast Away"]' -p max_degree=1000 -p max_triples=50
