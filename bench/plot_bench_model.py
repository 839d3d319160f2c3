#!/usr/bin/python3
"""Plot of a `tlm bench model` run, written next to its JSON.

  python3 bench/plot_bench_model.py bench/results/bench_model.json

<json>.png: per model, the compiled model's speed over PyTorch's (the better of its two
thread settings; median and min) and its peak memory relative to PyTorch's.
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
    x = range(len(rows))
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(4 + 1.6 * len(rows), 4))
    width = 0.38
    speed.bar([i - width / 2 for i in x], [r["speedup_vs_torch_median"] for r in rows], width,
              label="median")
    speed.bar([i + width / 2 for i in x], [r["speedup_vs_torch_min"] for r in rows], width,
              label="min")
    speed.axhline(1.0, color="black", linewidth=0.8)
    speed.set_xticks(list(x), names, rotation=30, ha="right")
    speed.set_ylabel("speed over PyTorch (x)")
    speed.set_title("latency: PyTorch / tlm")
    speed.legend()
    memory.bar(list(x), [r["compiled_peak_mb"] / r["torch_peak_mb"] for r in rows], 0.6,
               color="tab:green")
    memory.axhline(1.0, color="black", linewidth=0.8)
    memory.axhline(1.5, color="red", linewidth=0.8, linestyle="--")
    memory.set_xticks(list(x), names, rotation=30, ha="right")
    memory.set_ylabel("peak memory / PyTorch's")
    memory.set_title("peak memory (1.5x dashed)")
    fig.tight_layout()
    out = args.json_path.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()
