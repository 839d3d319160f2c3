#!/usr/bin/env bash
# Installs dependencies, builds tlm and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build && ctest --output-on-failure -j2 --timeout 1200
