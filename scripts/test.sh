#!/usr/bin/env bash
# Installs dependencies, builds tlm and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# torchvision's ResNet-50, MobileNetV2 and EfficientNet-B0 as ONNX, with PyTorch's outputs.
fixtures=build/onnx-fixtures
[ -f "$fixtures/efficientnet_b0.output.bin" ] || /usr/bin/python3 tests/fixtures/make_onnx_fixtures.py "$fixtures"
export TLM_ONNX_FIXTURES="$PWD/$fixtures"
cd build && ctest --output-on-failure -j2 --timeout 1200
