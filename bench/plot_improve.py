#!/usr/bin/python3
"""Plot of a `tlm improve` audit log, written next to it.

  python3 bench/plot_improve.py improve/audit.jsonl

<audit>.png, per round: left, the held-out geomean latency of the parent's and the
candidate's top-1 schedules (the decision under each pair); right, the candidate's
speedup over its parent per held-out task and per training family (geomean of the
family's tasks; a convolution's family includes its window), with the 5% slowdown line
that blocks promotion.
"""
import argparse
import json
import math

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def family(spec):
    op = spec.split(":")[0]
    if op not in ("conv2d", "dwconv2d"):
        return op
    params = dict(p.split("=") for p in spec.split(":")[1].split("+")[0].split(","))
    return "%s %sx%s" % (op, params["r"], params["s"])


def family_speedups(per_task):
    logs = {}
    for spec, ms in per_task.items():
        logs.setdefault(family(spec), []).append(math.log(ms["parent"] / ms["candidate"]))
    return {f: math.exp(sum(v) / len(v)) for f, v in sorted(logs.items())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("audit_path")
    args = parser.parse_args()
    with open(args.audit_path) as f:
        rounds = [json.loads(line) for line in f if line.strip()]
    fig, (gate, detail) = plt.subplots(1, 2, figsize=(15, 5), width_ratios=[1, 2.4])
    width = 0.38
    x = range(len(rounds))
    gate.bar([i - width / 2 for i in x], [r["held_out_geomean_ms"]["parent"] for r in rounds],
             width, label="parent (default)")
    gate.bar([i + width / 2 for i in x], [r["held_out_geomean_ms"]["candidate"] for r in rounds],
             width, label="candidate")
    gate.set_xticks(list(x))
    gate.set_xticklabels(["round %d\n%s" % (r["round"], r["decision"].split(":")[0].replace(
        "kept, not promoted", "kept")) for r in rounds])
    gate.set_ylabel("held-out geomean latency, ms (lower is better)")
    gate.legend()
    series = []
    for r in rounds:
        held = {"held-out " + s.split(":")[0] + (" " + family(s).split(" ")[1]
                                                 if " " in family(s) else ""):
                r["held_out_ms"][s]["parent"] / r["held_out_ms"][s]["candidate"]
                for s in r.get("held_out_ms", {})}
        train = {"training " + f: v for f, v in family_speedups(r.get("training_ms", {})).items()}
        series.append({**held, **train})
    labels = sorted({k for s in series for k in s}, key=lambda k: (not k.startswith("held"), k))
    bar = 0.8 / max(1, len(series))
    for j, (r, s) in enumerate(zip(rounds, series)):
        detail.bar([i + (j - (len(series) - 1) / 2) * bar for i in range(len(labels))],
                   [s.get(k, float("nan")) for k in labels], bar, label="round %d" % r["round"])
    detail.axhline(1.0, color="black", linewidth=0.8)
    detail.axhline(1 / 1.05, color="red", linewidth=0.8, linestyle="--",
                   label="training family 5% slower: not promoted")
    detail.set_yscale("log")
    detail.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.2fx"))
    detail.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.2fx"))
    detail.set_xticks(range(len(labels)))
    detail.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    detail.set_ylabel("candidate speedup over parent (top-1, log)")
    detail.legend(fontsize=8)
    fig.suptitle("tlm improve: " + args.audit_path)
    fig.tight_layout()
    out = args.audit_path.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=110)
    print("wrote", out)


if __name__ == "__main__":
    main()
