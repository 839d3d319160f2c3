#!/usr/bin/env python3
"""One peer runtime (ONNX Runtime or OpenVINO) holding one ONNX model, driven over stdin by
`tlm bench model --peers` so that its runs interleave with tlm's and PyTorch's.

    peer_runner.py MODEL.onnx --system ort|openvino [--threads 2] [--input NAME=FILE.npy ...]

Protocol (one line each way): after loading it prints `ready LOAD_SECONDS VERSION`; then
`run` runs the model once and answers `ok`; `output FILE.npy` writes the first output and
answers `ok`; `memory` answers `rss_mb BEFORE PEAK` (BEFORE: with the runtime's
libraries imported, before the model is loaded); `quit` (or end of input) exits.
An error answers `error MESSAGE` on one line and exits non-zero.

Settings, as ../../shared/peers/README.md fixed them for a fair comparison (batch 1, fp32,
the same thread count as tlm):
  ort       CPU execution provider, intra-op THREADS, inter-op 1, sequential,
            ORT_ENABLE_ALL; inputs and outputs bound once (IOBinding)
  openvino  CPU, INFERENCE_NUM_THREADS=THREADS, PERFORMANCE_HINT=LATENCY, NUM_STREAMS=1,
            INFERENCE_PRECISION_HINT=f32 (else it runs bf16 on CPUs with AVX512_BF16)
Inputs are cast to the dtype the model declares (token ids, masks as int64).
"""
import argparse
import sys
import time


def rss_mb():
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024.0
    return values["VmRSS"], values["VmHWM"]


NUMPY_OF_ONNX = {"tensor(float)": "float32", "tensor(int64)": "int64", "tensor(int32)": "int32",
                 "tensor(bool)": "bool", "tensor(double)": "float64"}


def load_inputs(specs, declared):
    """{name: array} with each array cast to the dtype the model declares for it."""
    import numpy as np
    arrays = {}
    for spec in specs:
        name, _, path = spec.partition("=")
        if name not in declared:
            raise ValueError(f"the model has no input '{name}' (it has {', '.join(declared)})")
        arrays[name] = np.ascontiguousarray(np.load(path).astype(declared[name]))
    missing = [n for n in declared if n not in arrays]
    if missing:
        raise ValueError(f"no file for input(s) {', '.join(missing)}")
    return arrays


def make_ort(path, specs, threads):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
    declared = {i.name: NUMPY_OF_ONNX.get(i.type, "float32") for i in sess.get_inputs()}
    arrays = load_inputs(specs, declared)
    binding = sess.io_binding()
    for name, array in arrays.items():
        binding.bind_cpu_input(name, array)
    for out in sess.get_outputs():
        binding.bind_output(out.name, "cpu")
    sess.run_with_iobinding(binding)  # first run: outputs allocated once, reused after

    def run():
        sess.run_with_iobinding(binding)

    def first_output():
        assert arrays  # the bound inputs live as long as the session runs
        return np.asarray(binding.copy_outputs_to_cpu()[0])

    return run, first_output, ort.__version__


def make_openvino(path, specs, threads):
    import numpy as np
    import openvino as ov
    import openvino.properties as props
    import openvino.properties.hint as hints
    import openvino.properties.streams as streams
    core = ov.Core()
    config = {props.inference_num_threads: threads,
              hints.performance_mode: hints.PerformanceMode.LATENCY,
              streams.num: 1,
              hints.inference_precision: ov.Type.f32}
    model = core.read_model(path)
    declared = {}
    for port in model.inputs:
        declared[port.get_any_name()] = np.dtype(port.get_element_type().to_dtype()).name
    arrays = load_inputs(specs, declared)
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    for name, array in arrays.items():
        request.set_tensor(name, ov.Tensor(array))
    request.infer()  # the first run, so that an output exists before any `run`

    def run():
        request.infer()

    def first_output():
        assert arrays  # the tensors share their memory: they live as long as the request runs
        return np.array(request.get_output_tensor(0).data)

    return run, first_output, ov.__version__.split("-")[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--system", required=True, choices=["ort", "openvino"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--input", action="append", default=[])
    args = parser.parse_args()
    try:
        import numpy as np
        __import__("onnxruntime" if args.system == "ort" else "openvino")
        before = rss_mb()[0]  # the runtime's libraries loaded, as tlm's are when it measures
        start = time.perf_counter()
        make = make_ort if args.system == "ort" else make_openvino
        run, first_output, version = make(args.model, args.input, args.threads)
        print(f"ready {time.perf_counter() - start:.3f} {version}", flush=True)
        for line in sys.stdin:
            words = line.split()
            if not words or words[0] == "quit":
                break
            if words[0] == "run":
                run()
                print("ok", flush=True)
            elif words[0] == "output":
                np.save(words[1], first_output().astype(np.float32))
                print("ok", flush=True)
            elif words[0] == "memory":
                print(f"rss_mb {before:.1f} {rss_mb()[1]:.1f}", flush=True)
            else:
                raise ValueError(f"unknown command '{words[0]}'")
    except Exception as e:  # one line for the caller, whatever failed
        message = " ".join(str(e).split())[:400]
        print(f"error {args.system}: {type(e).__name__}: {message}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
