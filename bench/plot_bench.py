#!/usr/bin/python3
"""Plots of a `tlm bench op` run, written next to its JSON.

  python3 bench/plot_bench.py bench/results/bench_op.json [--db bench/results/records.db]

<json>.png: speedup of every method over the fastest peer, per task (1.0 = as fast as
the fastest library or Halide autoscheduler; higher is better).
<json>.search.png (with --db): best latency found so far against measured trials, per
task and search method, relative to the task's fastest peer in the JSON.
"""
import argparse
import json
import math
import sqlite3
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def is_search(method):
    return method.startswith("evolutionary") or method.startswith("random")


def fastest_peer_ms(methods):
    peers = [m["median_ms"] for name, m in methods.items()
             if not is_search(name) and m["status"] == "ok"]
    return min(peers) if peers else None


def short_task(task):
    op, _, rest = task.partition(":")
    fields = [f.split("=")[1] for f in rest.split("+")[0].split(",")
              if f.split("=")[0] not in ("dilation", "groups", "kind")]
    epilogue = rest.split("+")[1:]
    return op + " " + "x".join(fields[:7]) + ("+" + "+".join(epilogue) if epilogue else "")


def plot_speedups(rows, path):
    names = []
    for row in rows:
        for name in row["methods"]:
            if name not in names:
                names.append(name)
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(rows)), 5))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        xs, ys = [], []
        for i, row in enumerate(rows):
            m = row["methods"].get(name)
            base = fastest_peer_ms(row["methods"])
            if m and m["status"] == "ok" and base:
                xs.append(i + k * width)
                ys.append(base / m["median_ms"])
        ax.bar(xs, ys, width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.7, color="gray", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_ylabel("speedup over the fastest peer (median latency)")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))])
    ax.set_xticklabels([short_task(r["task"]) for r in rows], rotation=30, ha="right",
                       fontsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_search_curves(rows, db_path, path):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    fig, axes = plt.subplots(math.ceil(len(rows) / 4), min(4, len(rows)),
                             figsize=(16, 3.2 * math.ceil(len(rows) / 4)), squeeze=False)
    for ax, row in zip(axes.flat, rows):
        base = fastest_peer_ms(row["methods"])
        for method in ("evolutionary", "random"):
            records = db.execute(
                "SELECT status, median_ms FROM records WHERE task_key = ? AND method = ? "
                "ORDER BY id", (row["task"], method)).fetchall()
            best, curve = None, []
            for status, median in records:
                if status == "ok" and (best is None or median < best):
                    best = median
                curve.append(base / best if best and base else float("nan"))
            if curve:
                ax.plot(range(1, len(curve) + 1), curve, label=method)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_title(short_task(row["task"]), fontsize=8)
        ax.set_xlabel("measured trials", fontsize=7)
        ax.set_ylabel("speedup over fastest peer", fontsize=7)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("json")
    parser.add_argument("--db")
    args = parser.parse_args()
    with open(args.json) as f:
        data = json.load(f)
    rows = data["tasks"] if isinstance(data, dict) else data
    if not rows:
        sys.exit("plot_bench: no rows in " + args.json)
    stem = args.json[:-5] if args.json.endswith(".json") else args.json
    plot_speedups(rows, stem + ".png")
    print("wrote", stem + ".png")
    if args.db:
        plot_search_curves(rows, args.db, stem + ".search.png")
        print("wrote", stem + ".search.png")


if __name__ == "__main__":
    main()
