#!/usr/bin/python3
"""The table, JSON and plot of bench/accept_onnx.sh.

  accept_onnx.py RESULTS_DIR ONNX_DIR MODEL...

Per model: imported (yes, or the one-line reason), tasks, compile seconds, tlm and PyTorch
median ms (interleaved, from `tlm bench model`), speed over PyTorch, and the largest
|tlm - PyTorch| relative to PyTorch's largest output magnitude, where PyTorch's output is
its own module's on the fixture's input. Writes bench/reports/accept_onnx.{txt,json,png}.
"""
import json
import os
import sys

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def row_of(results, onnx, model):
    with open(os.path.join(results, model + ".json")) as f:
        row = json.load(f)
    bench_path = os.path.join(results, model + ".bench.json")
    if row["imported"] != "yes" or not os.path.exists(bench_path):
        return row
    with open(bench_path) as f:
        bench = json.load(f)[0]
    torch = min(bench["torch_openblas1"]["median_ms"], bench["torch_default"]["median_ms"])
    row.update(tasks=sum(bench["strategies"].values()), compile_s=bench["compile_seconds"],
               tlm_ms=bench["compiled"]["median_ms"], torch_ms=torch,
               speedup=bench["speedup_vs_torch_median"], peak_mb=bench["compiled_peak_mb"],
               torch_peak_mb=bench["torch_peak_mb"])
    got = os.path.join(results, model + ".tlm.npy")
    if os.path.exists(got):
        expected = np.load(os.path.join(onnx, model + ".out.npy"))
        tlm = np.load(got).reshape(expected.shape)
        row["relative_error"] = float(np.abs(tlm - expected).max() / np.abs(expected).max())
    return row


def zoo_efficientnet(results):
    path = os.path.join(results, "zoo_efficientnet-b0.bench.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)[0]


def main():
    results, onnx, models = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = [row_of(results, onnx, m) for m in models]
    lines = ["%-20s %-8s %6s %10s %10s %10s %8s %10s" % (
        "model", "imported", "tasks", "compile_s", "tlm_ms", "pytorch_ms", "speedup", "rel_error")]
    for r in rows:
        if r["imported"] != "yes":
            lines.append("%-20s %s" % (r["model"], r["imported"]))
            continue
        lines.append("%-20s %-8s %6d %10.1f %10.2f %10.2f %7.2fx %10.2g" % (
            r["model"], "yes", r.get("tasks", 0), r.get("compile_s", 0), r.get("tlm_ms", 0),
            r.get("torch_ms", 0), r.get("speedup", 0), r.get("relative_error", float("nan"))))
    zoo = zoo_efficientnet(results)
    onnx_b0 = next((r for r in rows if r["model"] == "efficientnet_b0" and "tlm_ms" in r), None)
    summary = {}
    if zoo and onnx_b0:
        # Each side against PyTorch in its own interleaved run: compare speedups, so the
        # common reference cancels the moment each was measured at.
        ratio = onnx_b0["speedup"] / zoo["speedup_vs_torch_median"]
        summary["efficientnet_b0_onnx_over_zoo"] = ratio
        lines.append("EfficientNet-B0: ONNX %.2f ms (%.2fx PyTorch), zoo %.2f ms (%.2fx PyTorch): "
                     "ONNX at %.2f of the zoo build's speed against PyTorch" % (
                         onnx_b0["tlm_ms"], onnx_b0["speedup"], zoo["compiled"]["median_ms"],
                         zoo["speedup_vs_torch_median"], ratio))
    interleaved = os.path.join(results, "efficientnet_b0_onnx_vs_zoo.txt")
    if os.path.exists(interleaved):
        medians = {"efficientnet_b0": [], "efficientnet-b0": []}
        for line in open(interleaved):
            build, _, rest = line.partition(" ")
            if build in medians and "median " in rest:
                medians[build].append(float(rest.split("median ")[1].split(" ms")[0]))
        if all(medians.values()):
            onnx_ms = float(np.median(medians["efficientnet_b0"]))
            zoo_ms = float(np.median(medians["efficientnet-b0"]))
            summary["efficientnet_b0_interleaved"] = {"onnx_ms": onnx_ms, "zoo_ms": zoo_ms}
            lines.append("EfficientNet-B0 interleaved (%d rounds of 40 runs, median of medians): "
                         "ONNX %.2f ms, zoo %.2f ms: ONNX at %.2f of the zoo build's speed" % (
                             len(medians["efficientnet_b0"]), onnx_ms, zoo_ms, zoo_ms / onnx_ms))
    speedups = [r["speedup"] for r in rows if "speedup" in r]
    if speedups:
        summary["geomean_speedup"] = float(np.exp(np.mean(np.log(speedups))))
        lines.append("geomean speed over PyTorch: %.2fx over %d models" % (
            summary["geomean_speedup"], len(speedups)))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    os.makedirs("bench/reports", exist_ok=True)
    with open("bench/reports/accept_onnx.txt", "w") as f:
        f.write(text)
    with open("bench/reports/accept_onnx.json", "w") as f:
        json.dump({"rows": rows, "summary": summary}, f, indent=1)
    ran = [r for r in rows if "speedup" in r]
    if ran:
        fig, ax = plt.subplots(figsize=(3 + 0.7 * len(ran), 4))
        ax.bar(range(len(ran)), [r["speedup"] for r in ran])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(ran)), [r["model"] for r in ran], rotation=40, ha="right")
        ax.set_ylabel("speed over PyTorch (median, x)")
        ax.set_title("ONNX models at zero measurements")
        fig.tight_layout()
        fig.savefig("bench/reports/accept_onnx.png", dpi=120)


if __name__ == "__main__":
    main()
