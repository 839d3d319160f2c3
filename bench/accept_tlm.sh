#!/usr/bin/env bash
# Acceptance benchmark of the schedule model on the held-out tasks (shapes absent from
# every training and fine-tuning set): its top-1 with no measurement and the best of its
# top 32 measured, against the evolutionary search at 1000 trials, 32 random samples and
# the peers, interleaved in one run. Resumable (searches top up from the record store).
#   bash bench/accept_tlm.sh [--model models/tlm-...]
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
"$tlm" bench op $(grep -v '^#' bench/heldout_tasks.txt) \
  --methods tlm-1,tlm-32,evolutionary-1000,random-32,adams2019,mullapudi2016,li2018,onednn,openblas \
  --db bench/results/records.db --json bench/results/bench_tlm.json \
  --timeout 900 --memory-mb 24000 "$@"
/usr/bin/python3 bench/plot_bench.py bench/results/bench_tlm.json --db bench/results/records.db
