"""tlm: run models compiled by the tlm tensor compiler, and compile them.

    import numpy as np, tlm
    tlm.compile("resnet50", "out/resnet50")           # or a path to an .onnx file
    model = tlm.load("out/resnet50")
    print(model.inputs, model.outputs)                 # names, dtypes, shapes
    scores = model.run({"input": np.zeros((1, 3, 224, 224), np.float32)})["output"]

Running needs only this package (the C runtime, no libtorch). Compiling runs the `tlm`
tool installed beside it (or TLM_EXE, or the one on PATH). Failures raise tlm.Error with
the tool's or the runtime's one-line message.
"""
import os
import shutil
import subprocess

from ._runtime import Error, Model, TensorInfo, load, version

__all__ = ["Error", "Model", "TensorInfo", "compile", "load", "version"]


def _find_tool():
    """The tlm executable: TLM_EXE, else the one installed with this package, else PATH."""
    if os.environ.get("TLM_EXE"):
        return os.environ["TLM_EXE"]
    try:
        from ._tool import TOOL  # written at build (absolute) and at install (relative)
        path = os.path.normpath(os.path.join(os.path.dirname(__file__), TOOL))
        if os.access(path, os.X_OK):
            return path
    except ImportError:
        pass
    found = shutil.which("tlm")
    if not found:
        raise Error("cannot find the tlm tool (set TLM_EXE)")
    return found


def compile(model, out_dir, trials=0, strategy=None, extra_args=()):
    """Compiles a zoo name (resnet50, bert-base, ...) or an .onnx file into `out_dir`.

    trials: measurements per model (0: the shipped model's choice alone, in seconds).
    strategy: auto|store|tlm|reference|adams2019|mullapudi2016 (the tool's default if None).
    Returns out_dir, ready for tlm.load.
    """
    args = [_find_tool(), "compile", os.fspath(model), "-o", os.fspath(out_dir),
            "--trials", str(int(trials))]
    if strategy:
        args += ["--strategy", strategy]
    args += list(extra_args)
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        lines = [l for l in done.stderr.splitlines() if l.strip()]
        message = lines[-1] if lines else "tlm compile failed (exit %d)" % done.returncode
        prefix = "tlm: error: "
        raise Error(message[len(prefix):] if message.startswith(prefix) else message)
    return os.fspath(out_dir)
