#!/usr/bin/env bash
# Acceptance benchmark of "Faster than ONNX Runtime and OpenVINO": the same ONNX files in
# tlm, PyTorch (libtorch on the imported graph), ONNX Runtime and OpenVINO, 2 threads,
# interleaved (`tlm bench model --peers`), with per-task reports (`--report`):
#   models: torchvision ResNet-50, MobileNetV2, EfficientNet-B0 (224x224) and BERT-base and
#   GPT-2 as tests/fixtures/transformers.py writes them (embeddings, attention masks and
#   scale, BERT's erf GELU, GPT-2's causal mask and tied head; sequence 128), batch 1;
#   ResNet-50 and BERT-base also at batch 8.
#   1. zero measurements: the shipped model's top-1 per task (compile under 60 s);
#   2. --trials 32: 32 measured candidates per task (their own record store).
#
#   bash bench/peers/install.sh     # once: the peers' virtual environment
#   bash bench/accept_models.sh     # STEPS="tlm0" or "trials32" to run one; MODELS="resnet50
#                                   # bert" (names of the list below) for some models
#
# Results: bench/results/accept_models_{tlm0,trials32}.json (+ .png); the ONNX files in
# bench/results/onnx-full (exported when missing; random weights, fixed seeds).
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
onnx=${ONNX_DIR:-bench/results/onnx-full}
mkdir -p "$onnx" bench/results
files=()
for m in ${MODELS:-resnet50 mobilenet_v2 efficientnet_b0 bert gpt2 resnet50_b8 bert_b8}; do
  if [ ! -f "$onnx/$m.onnx" ]; then
    batch=1
    [[ $m == *_b8 ]] && batch=8
    /usr/bin/python3 tests/fixtures/make_onnx_fixtures.py "$onnx" --size full \
      --models "${m%_b8}" --batch $batch >&2
  fi
  files+=("$onnx/$m.onnx")
done
peers=(--peers ort,openvino)
if [ ! -x "${TLM_PEERS_VENV:-/opt/tlm-peers}/bin/python" ]; then
  echo "accept_models: no peers environment; bash bench/peers/install.sh makes it" >&2
  exit 1
fi
for step in ${STEPS:-tlm0 trials32}; do
  json=bench/results/accept_models_$step.json
  case $step in
    tlm0) how=(--strategy tlm --db bench/results/accept_models_none.db) ;;
    trials32)  # from an empty store, so every task has exactly its 32 trials
      rm -f bench/results/accept_models_trials.db*
      how=(--trials 32 --db bench/results/accept_models_trials.db) ;;
    *) echo "unknown step $step" >&2; exit 1 ;;
  esac
  "$tlm" bench model "${files[@]}" "${how[@]}" "${peers[@]}" --report \
    --out "out/accept-models-$step" --json "$json"
  /usr/bin/python3 bench/plot_bench_model.py "$json"
done
