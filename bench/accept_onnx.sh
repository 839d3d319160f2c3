#!/usr/bin/env bash
# Acceptance benchmark of "Any ONNX model in": the full-size model set exported to ONNX
# (torchvision's networks at their published image sizes, BERT-base, GPT-2 and a
# LLaMA-7B-wide decoder layer written in plain PyTorch; random weights, fixed seeds), each
# imported, compiled with zero measurements (the shipped model's top-1 per task), timed
# against PyTorch (libtorch running the same graph and weights, 2 threads, batch 1,
# interleaved) and checked against the output PyTorch's own module gave on the same input.
# EfficientNet-B0 is also built from the zoo, to compare the two paths.
#
#   bash bench/accept_onnx.sh            # MODELS="swin_t bert" to run some
#
# Resumable: a model with a result in bench/results/accept_onnx/ is not run again (delete
# the folder to start over). The table, JSON and PNG go to bench/reports/accept_onnx.*.
set -uo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
onnx=${ONNX_DIR:-bench/results/onnx-full}
results=bench/results/accept_onnx
models=${MODELS:-"resnet50 mobilenet_v2 efficientnet_b0 alexnet vgg11_bn googlenet inception_v3 \
mnasnet1_0 mobilenet_v3_large efficientnet_v2_s resnext50_32x4d swin_t bert gpt2 llama"}
mkdir -p "$onnx" "$results" out/accept-onnx
total=$(echo $models | wc -w)
done_count=0
for m in $models; do
  done_count=$((done_count + 1))
  [ -f "$results/$m.json" ] && continue
  echo "[$done_count/$total] $m" >&2
  [ -f "$onnx/$m.onnx" ] ||
    /usr/bin/python3 tests/fixtures/make_onnx_fixtures.py "$onnx" --size full --models "$m" >&2
  if "$tlm" bench model "$onnx/$m.onnx" --strategy tlm --db "$results/none.db" \
      --out out/accept-onnx --json "$results/$m.bench.json" > "$results/$m.log" 2>&1; then
    inputs=()
    for f in "$onnx/$m".in.*.npy; do
      name=${f#"$onnx/$m".in.}
      inputs+=(--input "${name%.npy}=$f")
    done
    "$tlm" run "out/accept-onnx/$m" "${inputs[@]}" --output "$results/$m.tlm.npy" >> "$results/$m.log" 2>&1
    echo "{\"model\": \"$m\", \"imported\": \"yes\"}" > "$results/$m.json"
  else
    reason=$(grep -m1 "error:" "$results/$m.log" | sed 's/"/\\"/g')
    echo "{\"model\": \"$m\", \"imported\": \"$reason\"}" > "$results/$m.json"
  fi
done
[ -f "$results/zoo_efficientnet-b0.bench.json" ] ||
  "$tlm" bench model efficientnet-b0 --strategy tlm --db "$results/none.db" --out out/accept-onnx \
    --json "$results/zoo_efficientnet-b0.bench.json" > "$results/zoo_efficientnet-b0.log" 2>&1
# The two EfficientNet-B0 builds against each other: 5 alternating rounds of 40 runs.
if [ ! -f "$results/efficientnet_b0_onnx_vs_zoo.txt" ] && [ -d out/accept-onnx/efficientnet_b0 ]; then
  for round in 1 2 3 4 5; do
    for build in efficientnet_b0 efficientnet-b0; do
      echo "$build $("$tlm" run "out/accept-onnx/$build" --bench 40 2>&1 | grep latency)"
    done
  done > "$results/efficientnet_b0_onnx_vs_zoo.txt"
fi
/usr/bin/python3 bench/accept_onnx.py "$results" "$onnx" $models
