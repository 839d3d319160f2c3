#!/usr/bin/python3
"""Plot of a `tlm bench model` run, written next to its JSON.

  python3 bench/plot_bench_model.py bench/results/bench_model.json

<json>.png: per model, the compiled model's speed over PyTorch's (the better of its two
thread settings; median and min) and its peak memory relative to PyTorch's; with peers
(`--peers`), also its speed and memory against the fastest of them (ONNX Runtime,
OpenVINO), and with `--report` the ceiling against that peer (its median over tlm's plan
at the machine's peak) as a black tick over each model.
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("json_path")
    args = parser.parse_args()
    with open(args.json_path) as f:
        rows = json.load(f)
    names = [r["model"].split("/")[-1] for r in rows]
    x = list(range(len(rows)))
    peers = [r for r in rows if "fastest_peer" in r]
    panels = 3 if peers else 2
    fig, axes = plt.subplots(1, panels, figsize=(2 + (1.6 + 0.6 * panels) * len(rows), 4))
    width = 0.38

    def speed_panel(ax, key, title, ylabel):
        ax.bar([i - width / 2 for i in x], [r.get(key + "_median", 0) for r in rows], width,
               label="median")
        ax.bar([i + width / 2 for i in x], [r.get(key + "_min", 0) for r in rows], width,
               label="min")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(x, names, rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend()

    speed_panel(axes[0], "speedup_vs_torch", "latency: PyTorch / tlm", "speed over PyTorch (x)")
    if peers:
        speed_panel(axes[2], "speedup_vs_fastest_peer", "latency: fastest peer / tlm",
                    "speed over the faster of ORT, OpenVINO (x)")
        ceilings = [(i, r["ceiling_vs_fastest_peer"]) for i, r in zip(x, rows)
                    if "ceiling_vs_fastest_peer" in r]
        if ceilings:
            axes[2].scatter([i for i, _ in ceilings], [c for _, c in ceilings], marker="_",
                            s=900, color="black", label="ceiling (plan at peak)", zorder=3)
            axes[2].legend()
    memory = axes[1]
    memory.bar([i - width / 2 for i in x], [r["compiled_peak_mb"] / r["torch_peak_mb"] for r in rows],
               width, color="tab:green", label="vs PyTorch")
    if peers:
        memory.bar([i + width / 2 for i in x], [r.get("memory_vs_fastest_peer", 0) for r in rows],
                   width, color="tab:olive", label="vs fastest peer")
        memory.legend()
    memory.axhline(1.0, color="black", linewidth=0.8)
    memory.axhline(1.5, color="red", linewidth=0.8, linestyle="--")
    memory.set_xticks(x, names, rotation=30, ha="right")
    memory.set_ylabel("peak memory ratio (tlm / other)")
    memory.set_title("peak memory (1.5x dashed)")
    fig.tight_layout()
    out = args.json_path.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()
