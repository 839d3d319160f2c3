#!/usr/bin/env bash
# Installs dependencies, builds tlm and runs the main job: the benchmark set of the
# foundation issue, our searches against Halide's autoschedulers and the libraries.
# TRIALS sets the search budget per task (default 1000, as the acceptance asks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
trials=${TRIALS:-1000}
mkdir -p bench/results
./build/src/cli/tlm bench op $(cat bench/op_set.txt) \
  --methods "evolutionary-$trials,random-$trials,adams2019,mullapudi2016,li2018,onednn,openblas" \
  --db bench/results/records.db --json bench/results/bench_op.json
/usr/bin/python3 bench/plot_bench.py bench/results/bench_op.json --db bench/results/records.db
