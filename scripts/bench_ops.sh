#!/usr/bin/env bash
# Installs dependencies, builds tlm and runs the operator benchmark: the benchmark set of
# the foundation issue, our searches against Halide's autoschedulers and the libraries.
# TRIALS sets the search budget per task (default 1000, as the acceptance asks). Adams2019
# needs minutes and more than 8 GB of address space on the large convolutions, hence the
# generous per-candidate limits.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
trials=${TRIALS:-1000}
mkdir -p bench/results
./build/src/cli/tlm bench op $(cat bench/op_set.txt) \
  --methods "evolutionary-$trials,random-$trials,adams2019,mullapudi2016,li2018,onednn,openblas" \
  --db bench/results/records.db --json bench/results/bench_op.json --timeout 900 --memory-mb 24000
/usr/bin/python3 bench/plot_bench.py bench/results/bench_op.json --db bench/results/records.db
