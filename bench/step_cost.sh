#!/usr/bin/env bash
# Fixed cost per step of a compiled model: a chain of 100 tiny dense layers (8x256 by 256x256,
# each a step of about 1 MFLOP, parallel in the schedule the model gives it) compiled with zero measurements and timed back to back
# (`tlm run --bench`), on tlm's spinning pool and on Halide's own (TLM_POOL=halide),
# alternating, 5 rounds; prints microseconds per step (median latency / 100 per round).
#   bash bench/step_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tlm=./build/src/cli/tlm
dir=bench/results/step_cost
mkdir -p "$dir"
/usr/bin/python3 - "$dir/chain.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
rng = np.random.default_rng(0)
# one weight for every layer, so that it stays in cache: the steps cost compute and
# their fixed cost, not memory traffic
inits = [numpy_helper.from_array((rng.standard_normal((256, 256)) / 16).astype(np.float32), "w")]
nodes, x = [], "x"
for i in range(100):
    nodes += [helper.make_node("MatMul", [x, "w"], [f"m{i}"]),
              helper.make_node("Relu", [f"m{i}"], [f"y{i}"])]
    x = f"y{i}"
graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 256])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [8, 256])], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
"$tlm" compile "$dir/chain.onnx" -o "$dir/chain" --strategy tlm --db "$dir/none.db" > /dev/null
for round in 1 2 3 4 5; do
  for pool in spin halide; do
    ms=$(TLM_POOL=$pool "$tlm" run "$dir/chain" --bench 2000 | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    echo "round $round pool $pool: $(python3 -c "print(f'{$ms * 1000 / 100:.2f}')") us per step (median $ms ms)"
  done
done
