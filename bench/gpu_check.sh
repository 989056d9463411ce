#!/usr/bin/env bash
# gpu_check.sh: issue 31's checks on a lent GPU machine, in one call (the device time is short).
#
#   GPU_CMD='bash bench/gpu_check.sh' GPU_TIMEOUT=540 bash .gpu/b/run.sh      (../shared/gpu kit)
#
# Needs ../shared/data/metaqa (kb.txt.gz and {1,2,3}-hop/qa_dev.txt) beside the project. In order,
# each step under its own time limit, so a slow or failing one leaves the rest their time:
#   1. the tests that run on CUDA where present (the `gpu` marks and the `device` fixture's cuda
#      cases), but not the sentence-transformers parity test (that package's scikit-learn cannot
#      load beside torch there: ../shared/gpu/README.md);
#   2. `kgqa ingest` of the MetaQA KB with the embedder on the device (seconds in its --json);
#   3. `python -m bench.gpu --no-cpu` on that store: the default MetaQA recipe (--train-limit
#      1000) on the device, each measurement printed as it lands. The CPU column of the same
#      recipe took longer than the rest together on the first run (2026-11-28): run it apart.
# Logs go to $OUT (pytest.log, ingest.json, gpu.jsonl); the kit's cmd.log holds everything.
set -u
OUT=${OUT:-/tmp/out}
STORE=${STORE:-/tmp/kgqa-metaqa}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
step() { echo "==== $(date -u +%T) $*"; }

step "1. tests on CUDA"
timeout -s INT 150 python3 -m pytest -q -p no:cacheprovider \
    tests/unit/retrieval/models tests/unit/reasoning/test_extractive.py \
    tests/unit/retrieval/evidence/test_path_pooling.py tests/unit/test_train_device.py \
    tests/unit/test_mor_train_device.py tests/unit/embed/test_transformer.py \
    tests/integration/test_retrieval_e2e.py tests/unit/test_train_loop.py \
    --deselect tests/unit/embed/test_transformer.py::test_embeddings_equal_sentence_transformers \
    -rfs 2>&1 | tee "$OUT/pytest.log" | tail -40

step "2. ingest MetaQA on the device"
rm -rf "$STORE"
time timeout 150 kgqa ingest ../shared/data/metaqa/kb.txt.gz --format metaqa \
    --data-dir "$STORE" --json > "$OUT/ingest.json"
echo "rc $?"; cat "$OUT/ingest.json"

step "3. bench.gpu, the default MetaQA recipe"
python3 -m bench.gpu --data-dir "$STORE" --train-limit 1000 --eval-limit 300 --no-cpu --out "$OUT/gpu.jsonl"
step "done"
