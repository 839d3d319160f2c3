#!/usr/bin/env bash
# Every schedule a record store holds for one task, timed inside a model rather than alone:
# for each stored candidate (fastest alone first), a copy of the store with only that
# candidate for the task, the model compiled from it (--strategy store) and run.
#   bash bench/candidates_in_model.sh TASK DB MODEL.onnx [MODEL2.onnx]   # RUNS=15
# Prints: rank alone, decisions, the record's median alone, then each model's median ms.
# With bench/cold_weights_onnx.py's distinct.onnx and shared.onnx it shows which schedule
# is fastest with cold weights (bench/reports/cold_weights_s25_intel.txt). Every other task
# of the model must have a record in DB too. Work files in out/candidates-in-model.
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
task=${1:?usage: candidates_in_model.sh TASK DB MODEL.onnx [MODEL2.onnx]}
db=${2:?} models=("${@:3}")
[ ${#models[@]} -gt 0 ] || { echo "candidates_in_model: no model" >&2; exit 1; }
key=$("$tlm" space "$task" | head -1 | cut -d' ' -f2)
out=out/candidates-in-model
mkdir -p "$out"
rank=0
sqlite3 "$db" "select decisions, median_ms from records where task_key='$key' and \
status='ok' group by decisions order by min(median_ms)" | while IFS='|' read -r dec alone; do
  rank=$((rank + 1))
  cp "$db" "$out/store.db"
  sqlite3 "$out/store.db" "delete from records where task_key='$key' and decisions<>'$dec'"
  line="$rank $dec alone=$alone"
  for m in "${models[@]}"; do
    "$tlm" compile "$m" -o "$out/model" --strategy store --db "$out/store.db" >/dev/null 2>&1
    ms=$("$tlm" run "$out/model" --bench "${RUNS:-15}" | grep -o "median [0-9.]*" | cut -d' ' -f2)
    line+=" $(basename "$m" .onnx)=$ms"
  done
  echo "$line"
done
