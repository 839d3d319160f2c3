#!/usr/bin/env bash
# Measured training data for the schedule model: an evolutionary search of TRIALS trials
# (default 128) on every distinct task of the zoo's networks and of
# bench/tuning_extra_tasks.txt (held-out tasks excluded), into bench/results/records.db. Resumable: each search tops up to TRIALS in all, so a
# rerun after an interruption continues where it stopped. Progress: tasks done / total.
#   TRIALS=128 bash bench/gen_tuning_data.sh [tlm executable]
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=${1:-./build/src/cli/tlm}
trials=${TRIALS:-128}
db=bench/results/records.db
list=bench/results/tuning_tasks.txt
mkdir -p bench/results
held_out=$(grep -v '^#' bench/heldout_tasks.txt | while read -r t; do
  "$tlm" space "$t" | head -1 | cut -d' ' -f2; done)  # canonical keys
{
  grep -v '^#' bench/tuning_extra_tasks.txt | while read -r t; do
    "$tlm" space "$t" | head -1 | cut -d' ' -f2; done
  for m in resnet50 mobilenetv2 efficientnet-b0 bert-base gpt2; do "$tlm" tasks "$m" --specs; done
} | awk '!seen[$0]++' | grep -v -F -x -f <(echo "$held_out") > "$list"
total=$(wc -l < "$list")
done_tasks=0
start=$(date +%s)
while read -r task; do
  "$tlm" tune "$task" --method evolutionary --trials "$trials" --up-to --db "$db" \
    --timeout 300 --memory-mb 16000 < /dev/null || echo "gen_tuning_data: $task failed" >&2
  done_tasks=$((done_tasks + 1))
  elapsed=$(($(date +%s) - start))
  echo "gen_tuning_data: $done_tasks/$total tasks, ${elapsed}s, ETA $((elapsed * (total - done_tasks) / done_tasks))s" >&2
done < "$list"
