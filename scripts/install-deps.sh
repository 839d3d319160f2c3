#!/usr/bin/env bash
# Installs every Debian package tlm needs to build, test and run (Debian 12, as root).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libhalide14-0-dev
  libtorch-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev libopenblas-dev
  libsqlite3-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev googletest
  python3 python3-matplotlib
  python3-dev python3-numpy pybind11-dev  # the Python package `tlm` (src/python)
  python3-torch python3-torchvision  # ONNX fixtures of the end-to-end tests (torchvision export)
)
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (apt-get needs it)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
