#!/usr/bin/env bash
# Installs dependencies, builds tlm and runs the main job: compile a zoo model (MODEL,
# default resnet50) with the shipped schedule model and run the artifact, with a report
# of where the time goes. Extra arguments go to `tlm compile` (e.g. --trials 32).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
model=${MODEL:-resnet50}
./build/src/cli/tlm compile "$model" -o "out/$model" "$@"
./build/src/cli/tlm run "out/$model" --bench 10 --report
