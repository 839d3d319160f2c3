#!/usr/bin/env bash
# Installs dependencies, builds tlm and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# torchvision's networks and three transformers as ONNX (small sizes), with PyTorch's
# outputs; remade when the script changes.
fixtures=build/onnx-fixtures
stamp=$(md5sum tests/fixtures/*.py | md5sum | cut -c1-16)
if [ "$(cat "$fixtures/stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$fixtures"
  /usr/bin/python3 tests/fixtures/make_onnx_fixtures.py "$fixtures" --size ci
  echo "$stamp" > "$fixtures/stamp"
fi
export TLM_ONNX_FIXTURES="$PWD/$fixtures"
cd build && ctest --output-on-failure -j2 --timeout 1200
