#!/usr/bin/env bash
# Acceptance benchmark of whole models against PyTorch (libtorch, same weights, 2 threads,
# interleaved): a zero-measurement compile with the shipped model, then a compile that
# measures 32 candidates per task (its measurements go to their own record store).
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
models="resnet50 mobilenetv2 efficientnet-b0 bert-base gpt2"
"$tlm" bench model $models --strategy tlm --out out/bench-tlm0 \
  --json bench/results/bench_model_tlm0.json
/usr/bin/python3 bench/plot_bench_model.py bench/results/bench_model_tlm0.json
"$tlm" bench model $models --trials 32 --db bench/results/model_trials.db \
  --out out/bench-trials32 --json bench/results/bench_model_trials32.json
/usr/bin/python3 bench/plot_bench_model.py bench/results/bench_model_trials32.json
