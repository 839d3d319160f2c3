#!/usr/bin/env bash
# Two checkpoints on the same models, timed interleaved: each model compiled at zero
# measurements with checkpoint A and with B (`--strategy tlm --model M --db none`), then
# ROUNDS rounds of `tlm run DIR --bench RUNS`, A then B. Prints each round and, per model,
# the ratio A/B of the medians (the median and the min over rounds; > 1: B is faster).
#
#   bash bench/checkpoint_ab.sh models/tlm-A models/tlm-B MODEL...   # ROUNDS=4 RUNS=20
#
# MODEL is a zoo name or an ONNX file. Artifacts in out/checkpoint-ab/{a,b}-NAME.
# TLM_A, TLM_B: the tlm binaries that compile and run A and B (default: this build), to
# compare two builds with one checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
tlm_a=${TLM_A:-$tlm} tlm_b=${TLM_B:-$tlm}
a=${1:?usage: checkpoint_ab.sh CHECKPOINT_A CHECKPOINT_B MODEL...}
b=${2:?} models=("${@:3}")
[ ${#models[@]} -gt 0 ] || { echo "checkpoint_ab: no model" >&2; exit 1; }
rounds=${ROUNDS:-4} runs=${RUNS:-20}
out=out/checkpoint-ab
mkdir -p "$out"
rm -f "$out/none.db"
for m in "${models[@]}"; do
  name=$(basename "$m" .onnx)
  for x in a b; do  # ${!x}: the checkpoint named by $a or $b
    tlm_x=tlm_$x
    "${!tlm_x}" compile "$m" -o "$out/$x-$name" --strategy tlm --model "${!x}" --db "$out/none.db" \
      >"$out/$x-$name.log" 2>&1 || { tail -1 "$out/$x-$name.log" >&2; exit 1; }
  done
done
median() { "$1" run "$2" --bench "$runs" | grep -o "median [0-9.]*" | cut -d' ' -f2; }
for m in "${models[@]}"; do
  name=$(basename "$m" .onnx)
  ratios=()
  for round in $(seq "$rounds"); do
    ma=$(median "$tlm_a" "$out/a-$name")
    mb=$(median "$tlm_b" "$out/b-$name")
    ratios+=("$(python3 -c "print(f'{$ma / $mb:.3f}')")")
    echo "$name round $round: A $ma ms, B $mb ms"
  done
  printf '%s\n' "${ratios[@]}" | python3 -c "
import statistics, sys
r = [float(x) for x in sys.stdin]
print(f'$name A/B: median {statistics.median(r):.3f}x, min {min(r):.3f}x, max {max(r):.3f}x ({len(r)} rounds)')"
done
