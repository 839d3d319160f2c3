#!/usr/bin/env bash
# Two checkpoints' top-1 schedules on single tasks, timed interleaved: for each task, each
# checkpoint's top-1 (`tlm gen TASK -k 1 --model M`), then ROUNDS rounds of `tlm measure
# TASK --method space --decisions D`, A then B. Prints per task the ratio A/B of the medians
# over rounds (> 1: B is faster), the geomean over the tasks and the worst task. The check a
# fine-tune passes on shapes it never trained on before it is promoted (models/README.md):
# B no slower in geomean (0.99x allowed for noise) and no task below FLOOR (default 0.8;
# a fine-tune that halved matmul 640^3 kept a geomean of 1.001x).
#
#   bash bench/checkpoint_tasks_ab.sh models/tlm-A models/tlm-B TASKFILE...   # ROUNDS=3
#
# TASKFILE: one task spec per line, '#' lines skipped (bench/heldout_tasks.txt,
# bench/validation_tasks.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || {
  echo "usage: checkpoint_tasks_ab.sh CHECKPOINT_A CHECKPOINT_B TASKFILE..." >&2
  exit 1
}
a=$1 b=$2 files=("${@:3}") rounds=${ROUNDS:-3} tlm=./build/src/cli/tlm
top1() { "$tlm" gen "$1" -k 1 --model "$2" 2>/dev/null | grep log_prob | cut -d' ' -f1; }
median_ms() {
  "$tlm" measure "$1" --method space --decisions "$2" | grep -o "median [0-9.]*" | cut -d' ' -f2
}
ratios=()
while read -r task; do
  da=$(top1 "$task" "$a") db=$(top1 "$task" "$b")
  ta=() tb=()
  for _ in $(seq "$rounds"); do
    ta+=("$(median_ms "$task" "$da")")
    tb+=("$(median_ms "$task" "$db")")
  done
  ratio=$(python3 -c "
import statistics
a, b = statistics.median([$(IFS=,; echo "${ta[*]}")]), statistics.median([$(IFS=,; echo "${tb[*]}")])
print(f'{a / b:.3f} {a:.4f} {b:.4f}')")
  echo "$ratio $task"
  ratios+=("${ratio%% *}")
done < <(grep -hv '^#' "${files[@]}" | grep .)
printf '%s\n' "${ratios[@]}" | FLOOR=${FLOOR:-0.8} python3 -c "
import math, os, sys
r = [float(x) for x in sys.stdin]
geomean, worst, floor = math.exp(sum(map(math.log, r)) / len(r)), min(r), float(os.environ['FLOOR'])
print(f'geomean A/B over {len(r)} tasks: {geomean:.3f}x; worst task {worst:.3f}x')
print('gate: ' + ('passed' if geomean >= 0.99 and worst >= floor else 'failed') +
      f' (B no slower in geomean, 0.99x for noise; no task below {floor}x)')"
