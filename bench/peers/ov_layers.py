#!/usr/bin/env python3
"""OpenVINO's time per layer on one ONNX file, to set beside `tlm run --report`.

    /opt/tlm-peers/bin/python bench/peers/ov_layers.py MODEL.onnx [RUNS]

Same settings as peer_runner.py (CPU, 2 inference threads, latency hint, one stream, f32)
plus PERF_COUNT. Prints the latency median, then each layer's median real time over RUNS
runs (default 100) with its type and the kernel OpenVINO chose (exec type), largest first.
"""
import collections
import sys
import time

import numpy as np
import openvino as ov


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    config = {"INFERENCE_NUM_THREADS": 2, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1,
              "INFERENCE_PRECISION_HINT": "f32", "PERF_COUNT": True}
    compiled = ov.Core().compile_model(path, "CPU", config)
    request = compiled.create_infer_request()
    x = np.random.rand(*compiled.inputs[0].shape).astype(np.float32)
    for _ in range(10):
        request.infer({0: x})
    per_layer = collections.defaultdict(list)
    latency = []
    for _ in range(runs):
        start = time.perf_counter()
        request.infer({0: x})
        latency.append(time.perf_counter() - start)
        for p in request.profiling_info:
            per_layer[(p.node_name, p.node_type, p.exec_type)].append(
                p.real_time.total_seconds() * 1e3)
    rows = sorted(((np.median(v), k) for k, v in per_layer.items()), reverse=True)
    print(f"latency median {np.median(latency) * 1e3:.3f} ms; layers' medians sum to "
          f"{sum(r[0] for r in rows):.3f} ms")
    for ms, (name, kind, kernel) in rows:
        if ms > 0.005:
            print(f"{ms:7.3f}  {kind:<14} {kernel:<28} {name}")


if __name__ == "__main__":
    main()
