"""python3 bench/api_bench.py ARTIFACT RUNS: times RUNS calls of model.run through the
Python package (after one untimed run), NumPy arrays in and out, and prints
"median MS min MS" as `tlm run --bench` measures its own runs (bench/api_overhead.py).
Needs PYTHONPATH with the package (build/python, or an installed tree)."""
import sys
import time

import numpy as np

import tlm

model = tlm.load(sys.argv[1])
runs = int(sys.argv[2])
rng = np.random.default_rng(0)
feeds = {i.name: (rng.standard_normal(i.shape).astype(np.float32) if i.dtype == "float32"
                  else rng.integers(0, 2, i.shape).astype(i.dtype)) for i in model.inputs}
model.run(feeds)
ms = []
for _ in range(runs):
    start = time.perf_counter()
    model.run(feeds)
    ms.append((time.perf_counter() - start) * 1e3)
ms.sort()
print("median %.4f min %.4f" % (ms[len(ms) // 2], ms[0]))
