#!/usr/bin/env bash
# Winograd F(4x4, 3x3) against direct 3x3 convolutions on one model: the same compile
# (zero measurements, the shipped model's top-1) with and without the rewrite, then
# ROUNDS interleaved rounds of `tlm run --bench RUNS` on each, and a per-task report of
# the Winograd build.
#
#   bash bench/winograd_ab.sh bench/results/onnx-full/resnet50.onnx    # ROUNDS=5 RUNS=30
#
# Artifacts in out/winograd-ab/{direct,winograd}; the rounds go to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
model=${1:?usage: winograd_ab.sh MODEL}
rounds=${ROUNDS:-5} runs=${RUNS:-30}
out=out/winograd-ab
mkdir -p "$out"
how=(--strategy tlm --db bench/results/accept_models_none.db)
"$tlm" compile "$model" -o "$out/direct" "${how[@]}" --no-winograd | head -1
"$tlm" compile "$model" -o "$out/winograd" "${how[@]}" | head -1
for round in $(seq "$rounds"); do
  for build in direct winograd; do
    printf '%-8s round %d: ' "$build" "$round"
    "$tlm" run "$out/$build" --bench "$runs" | grep latency
  done
done
"$tlm" run "$out/winograd" --report 2>/dev/null | grep -E "winograd|batch_matmul|in all"
