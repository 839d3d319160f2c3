"""What running a compiled model from an application costs over the tool's own runs
(issue "Use the compiled model from an application", point 5).

    /usr/bin/python3 bench/api_overhead.py [--models resnet50,bert-base] [--rounds 7] [--runs 20]

Each model is compiled once (zero measurements, shipped model) into out/api-overhead/.
Then, in interleaved rounds (the order rotated each round), three processes time RUNS runs
of the same artifact after one untimed run: `tlm run --bench RUNS` (the tool), the C API
(build/src/capi/tlm_api_bench) and the Python package (bench/api_bench.py, NumPy arrays in
and out, conversion included). Per round the ratio of each API's median to the tool's;
reported: min and median of those ratios over rounds. Results in
bench/results/api_overhead.{json,png} and a table on stdout.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "build/src/cli/tlm")
C_BENCH = os.path.join(ROOT, "build/src/capi/tlm_api_bench")
PY_BENCH = os.path.join(ROOT, "bench/api_bench.py")
WAYS = ["tool", "c", "python"]


def command(way, artifact, runs):
    if way == "tool":
        return [TOOL, "run", artifact, "--bench", str(runs)]
    if way == "c":
        return [C_BENCH, artifact, str(runs)]
    return [sys.executable, PY_BENCH, artifact, str(runs)]


def timed(way, artifact, runs):
    """(median ms, min ms[, tlm_open ms]) that one process reports for its runs."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "build/python"))
    out = subprocess.run(command(way, artifact, runs), check=True, capture_output=True,
                         text=True, env=env, cwd=ROOT).stdout
    if way == "tool":
        found = re.search(r"latency: min ([\d.]+) ms, median ([\d.]+) ms", out)
        return float(found.group(2)), float(found.group(1))
    found = re.search(r"median ([\d.]+) min ([\d.]+)( open ([\d.]+))?", out)
    times = (float(found.group(1)), float(found.group(2)))
    return times + (float(found.group(4)),) if found.group(4) else times


def compile_once(model):
    artifact = os.path.join(ROOT, "out/api-overhead", model)
    if not os.path.exists(os.path.join(artifact, "plan.json")):
        subprocess.run([TOOL, "compile", model, "-o", artifact], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
    return artifact


def summarize(rounds):
    """Per API: the ratio of its median to the tool's in each round, min and median."""
    summary = {"tool_median_ms": statistics.median(r["tool"][0] for r in rounds),
               "c_open_median_ms": statistics.median(r["c"][2] for r in rounds)}
    for way in ("c", "python"):
        ratios = [r[way][0] / r["tool"][0] for r in rounds]
        summary[way] = {"median_ms": statistics.median(r[way][0] for r in rounds),
                        "ratio_min": min(ratios), "ratio_median": statistics.median(ratios),
                        "ratios": ratios}
    return summary


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5))
    models = list(results["models"])
    for k, way in enumerate(("c", "python")):
        for m, model in enumerate(models):
            ratios = results["models"][model]["summary"][way]["ratios"]
            x = m * 3 + k
            ax.scatter([x] * len(ratios), ratios, s=12, color="C%d" % k, alpha=0.6)
            ax.bar(x, statistics.median(ratios), color="C%d" % k, alpha=0.35,
                   label={"c": "C API", "python": "Python"}[way] if m == 0 else None)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(1.02, color="C0", lw=0.8, ls="--")
    ax.axhline(1.05, color="C1", lw=0.8, ls="--")
    ax.set_xticks([m * 3 + 0.5 for m in range(len(models))], models)
    ax.set_ylabel("median time / tlm run's (per round)")
    lows = [min(results["models"][m]["summary"][w]["ratios"]) for m in models for w in ("c", "python")]
    ax.set_ylim(min(0.95, min(lows) - 0.01), 1.08)
    ax.set_title("Runs through the C API and Python vs tlm run (%s)" % results["hardware"],
                 fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert-base")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench/results/api_overhead"))
    args = parser.parse_args()
    results = {"command": " ".join(sys.argv), "runs": args.runs, "models": {}}
    artifacts = {m: compile_once(m) for m in args.models.split(",")}
    results["hardware"] = json.load(open(os.path.join(next(iter(artifacts.values())),
                                                      "plan.json")))["hardware"]
    rounds = {m: [] for m in artifacts}
    started, total = time.time(), args.rounds * len(artifacts)
    for r in range(args.rounds):
        order = WAYS[r % 3:] + WAYS[:r % 3]
        for model, artifact in artifacts.items():
            rounds[model].append({way: timed(way, artifact, args.runs) for way in order})
            done = r * len(artifacts) + list(artifacts).index(model) + 1
            eta = (time.time() - started) / done * (total - done)
            print("round %d/%d %s: %s (ETA %.0f s)" % (r + 1, args.rounds, model, ", ".join(
                "%s %.2f ms" % (w, rounds[model][-1][w][0]) for w in WAYS), eta), flush=True)
    print("\nmodel      tool median  C API median (ratio min/median)  Python median (ratio min/median)"
          "  tlm_open")
    for model in artifacts:
        s = summarize(rounds[model])
        results["models"][model] = {"rounds": rounds[model], "summary": s}
        print("%-10s %8.2f ms  %8.2f ms (%.3f / %.3f)            %8.2f ms (%.3f / %.3f)"
              "           %6.0f ms" % (
                  model, s["tool_median_ms"], s["c"]["median_ms"], s["c"]["ratio_min"],
                  s["c"]["ratio_median"], s["python"]["median_ms"], s["python"]["ratio_min"],
                  s["python"]["ratio_median"], s["c_open_median_ms"]))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    json.dump(results, open(args.out + ".json", "w"), indent=1)
    plot(results, args.out + ".png")
    print("wrote %s.json and .png" % args.out)


if __name__ == "__main__":
    main()
