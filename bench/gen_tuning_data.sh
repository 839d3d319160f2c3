#!/usr/bin/env bash
# Measured training data for the schedule model: a search of TRIALS trials (default 128)
# by METHOD (default evolutionary; `transfer` seeds each search with the best schedules
# of the most similar tasks measured so far, never from a held-out task) on every distinct
# task of the zoo's networks and of bench/tuning_extra_tasks.txt (held-out tasks
# excluded), into bench/results/records.db. Resumable: each search tops up to TRIALS of
# its method, so a rerun after an interruption continues where it stopped. Progress:
# tasks done / total, ETA.
# With ONNX_DIR, the tasks of every .onnx file there come after them (the full-size model
# set of bench/accept_onnx.sh, whose new task kinds and shapes the zoo lacks).
#   TRIALS=128 bash bench/gen_tuning_data.sh [tlm executable]
#   METHOD=transfer TRIALS=32 bash bench/gen_tuning_data.sh
#   ONNX_DIR=bench/results/onnx-full METHOD=transfer TRIALS=32 bash bench/gen_tuning_data.sh
# With KINDS (a regex of task kinds, e.g. KINDS='dense|conv2d') only those tasks are tuned:
# after a space change of those kinds (session 16: dense gained its weight layout).
# With ACTIVATION_BLOCK=16 (or 8) the models' tasks are those of activations kept
# channel-blocked between convolutions (tlm tasks --activation-block), and only the tasks
# that read or write blocks are tuned (session 18: the blocked convolutions).
# With MODELS='a.onnx b.onnx' only those models' tasks are tuned (no zoo, no extra tasks).
# With MORE=N each task gets N new trials whatever it has (not topped up); SKIP=K resumes
# such a run after its first K tasks.
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=${1:-./build/src/cli/tlm}
trials=${TRIALS:-128}
method=${METHOD:-evolutionary}
db=bench/results/records.db
list=bench/results/tuning_tasks.txt
mkdir -p bench/results
layout=()
blocked_only='.'
if [ -n "${ACTIVATION_BLOCK:-}" ]; then
  layout=(--activation-block "$ACTIVATION_BLOCK")
  blocked_only='block='
fi
held_out=$(grep -v '^#' bench/heldout_tasks.txt | while read -r t; do
  "$tlm" space "$t" | head -1 | cut -d' ' -f2; done)  # canonical keys
{
  if [ -n "${MODELS:-}" ]; then
    for f in $MODELS; do "$tlm" tasks "$f" --specs "${layout[@]}"; done
  else
    grep -v '^#' bench/tuning_extra_tasks.txt | while read -r t; do
      "$tlm" space "$t" | head -1 | cut -d' ' -f2; done
    for m in resnet50 mobilenetv2 efficientnet-b0 bert-base gpt2; do
      "$tlm" tasks "$m" --specs "${layout[@]}"; done
    if [ -n "${ONNX_DIR:-}" ]; then
      for f in "$ONNX_DIR"/*.onnx; do "$tlm" tasks "$f" --specs "${layout[@]}"; done
    fi
  fi
} | awk '!seen[$0]++' | grep -v -F -x -f <(echo "$held_out") |
  grep -E "^(${KINDS:-[a-z_0-9]+}):" | grep -E "${blocked_only}" > "$list"
total=$(wc -l < "$list")
start=$(date +%s)
count=(--trials "$trials" --up-to)
[ -n "${MORE:-}" ] && count=(--trials "$MORE")
tail -n +$((${SKIP:-0} + 1)) "$list" > "$list.todo"
done_tasks=${SKIP:-0}
while read -r task; do
  "$tlm" tune "$task" --method "$method" "${count[@]}" --db "$db" \
    --exclude bench/heldout_tasks.txt --timeout 300 --memory-mb 16000 < /dev/null || echo "gen_tuning_data: $task failed" >&2
  done_tasks=$((done_tasks + 1))
  elapsed=$(($(date +%s) - start))
  echo "gen_tuning_data: $done_tasks/$total tasks, ${elapsed}s, ETA $((elapsed * (total - done_tasks) / (done_tasks - ${SKIP:-0})))s" >&2
done < "$list.todo"
