#!/usr/bin/env bash
# The peers of `tlm bench model --peers ort,openvino`: ONNX Runtime and OpenVINO from PyPI
# in their own virtual environment (the product never depends on them). Rerunnable.
#   bash bench/peers/install.sh            # into /opt/tlm-peers (or $TLM_PEERS_VENV)
# Versions: those the team's peer measurements used (../shared/peers/README.md).
set -euo pipefail
venv=${TLM_PEERS_VENV:-/opt/tlm-peers}
if ! /usr/bin/python3 -c "import venv, ensurepip" 2>/dev/null; then
  apt-get update
  apt-get install -y python3-venv
fi
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "onnxruntime==1.32.0" "openvino==2026.4.1" "numpy<2"
"$venv/bin/python" -c "import onnxruntime, openvino, numpy; \
print('onnxruntime', onnxruntime.__version__, '| openvino', openvino.__version__, '| numpy', numpy.__version__)"
