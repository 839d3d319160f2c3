#!/usr/bin/env python3
"""How far an acceptance run's tlm could go against the faster peer, from what it measured.

`bench/accept_models.sh` gives, per model, tlm's median in the model and the faster peer's.
This asks two questions of the same run, without timing anything:

  fastest known  If every task ran the fastest schedule the record store holds for it (the
                 store's best of all searches ever run on this host, not just this run's),
                 and the model kept its measured overhead around its kernels (its time in
                 the model over its kernels' sum), what would tlm's median be?
                   projected_ms = tlm_ms * store_fastest_sum / plan_kernels_sum
  peak bound     At the machine's fp32 peak on every FLOP of tlm's plan (report.json:
                 each task's GFLOP; the highest peak the run's reports measured), the
                 least time any schedule of today's kernels could take; peer_ms over it is
                 the most that tlm could be ahead. Compute-bound models (transformers) sit
                 near it.

The geomean of each column against --target says whether a target is within today's
schedule space (fastest known) or its kernels (peak bound), and what the models that are
not near their peak would each need for it.

  python3 bench/trials_ceiling.py --json bench/results/accept_models_trials32.json \
      --artifacts out/accept-models-trials32 --plan-db bench/results/accept_models_trials.db \
      [--db bench/results/records.db] [--target 1.2]

Each model's artifact folder is ARTIFACTS/<model without .onnx> (plan.json, and
report.json from --report). A plan's schedule is looked up in the run's own store
(--plan-db) first: the same schedule's median in the main store may come from a noisier
hour (a 0.08 ms convolution stored at 3.6 ms). A task whose plan schedule neither store
measured counts at the fastest known for both sums (the ratio ignores it). The projection
is as good as the records: timed at other hours than the run, they can scale it past the
peak bound, where it is held.
"""
import argparse
import json
import math
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from top1_vs_store import looked_up  # noqa: E402

NEAR_PEAK = 0.8  # a model whose tlm median is at least this share of its peak bound


def load_json(path):
    with open(path) as f:
        return json.load(f)


def kernel_sums(db, plan_db, plan_path):
    """(the plan's schedules summed by their medians, the fastest known summed), over the
    plan's tasks with records. A schedule's median comes from `plan_db` (the run's own
    store, timed in the hour of the run) where it has it, else from `db`; the fastest is
    the least of both stores'."""
    plan_sum = fastest_sum = 0.0
    main = looked_up(db, plan_path, cold=False)
    own = looked_up(plan_db, plan_path, cold=False) if plan_db else {}
    for spec, row in main.items():
        mine_row = own.get(spec) or {}
        bests = [r["best_ms"] for r in (row, mine_row) if r.get("best_ms") is not None]
        if not bests:
            continue
        mine = next((r["ms"] for r in (mine_row, row) if r.get("ms") is not None), min(bests))
        plan_sum += mine * row["uses"]
        fastest_sum += min(bests) * row["uses"]
    return plan_sum, fastest_sum


def batch_of(plan_path):
    """The leading dimension of the plan's first input."""
    plan = load_json(plan_path)
    return plan["tensors"][plan["inputs"][0]]["shape"][0]


def report_of(folder):
    path = os.path.join(folder, "report.json")
    return load_json(path) if os.path.exists(path) else None


def machine_peak(reports):
    """The machine's fp32 peak: the highest any report of the run measured (a report
    measured while the host was busy says less, not a slower machine)."""
    peaks = [r["peak_gflops"] for r in reports if r and r.get("peak_gflops")]
    return max(peaks) if peaks else None


def peak_ms(report, peak_gflops):
    """Least time for the plan's FLOPs at the peak (None without a report or a peak)."""
    if not report or not peak_gflops:
        return None
    return sum(t["gflop"] * t["steps"] for t in report["tasks"]) / peak_gflops * 1e3


def model_name(entry):
    return entry["model"][:-5] if entry["model"].endswith(".onnx") else entry["model"]


def model_row(db, plan_db, entry, folder, report, peak_gflops):
    """One model's figures: `folder` its artifact, `report` its report.json (or None)."""
    plan_path = os.path.join(folder, "plan.json")
    plan_sum, fastest_sum = kernel_sums(db, plan_db, plan_path)
    tlm_ms = entry["compiled"]["median_ms"]
    peer = entry["fastest_peer"]
    peer_ms = entry["peers"][peer]["median_ms"]
    projected = tlm_ms * fastest_sum / plan_sum if plan_sum > 0 else tlm_ms
    bound = peak_ms(report, peak_gflops)
    if bound:  # records from noisier hours can scale it past what the peak allows
        projected = max(projected, bound)
    return {"model": model_name(entry), "batch": batch_of(plan_path), "tlm_ms": tlm_ms,
            "peer": peer, "peer_ms": peer_ms, "speed": peer_ms / tlm_ms,
            "kernels_ms": plan_sum, "fastest_ms": fastest_sum,
            "projected_ms": projected, "projected_speed": peer_ms / projected,
            "peak_ms": bound, "peak_speed": peer_ms / bound if bound else None}


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def needed_elsewhere(rows, target, key):
    """The speed each model far from its peak would need for the geomean to reach `target`,
    the models near their peak at their `key` speed ("speed": as measured, "peak_speed":
    at their bound); None when every model is near its peak."""
    near = [r for r in rows if r["peak_ms"] and r["tlm_ms"] * NEAR_PEAK <= r["peak_ms"]]
    far = [r for r in rows if r not in near]
    if not far:
        return None, near
    kept = sum(math.log(r[key]) for r in near)
    return math.exp((len(rows) * math.log(target) - kept) / len(far)), near


def table(rows, target):
    lines = [f"{'model':16} {'tlm_ms':>8} {'peer':>9} {'peer_ms':>8} {'speed':>6} "
             f"{'kernels':>8} {'fastest':>8} {'proj_ms':>8} {'proj':>6} {'peak_ms':>8} "
             f"{'bound':>6}"]
    for r in rows:
        peak = f"{r['peak_ms']:8.2f} {r['peak_speed']:5.2f}x" if r["peak_ms"] else \
            f"{'-':>8} {'-':>6}"
        lines.append(f"{r['model']:16} {r['tlm_ms']:8.2f} {r['peer']:>9} {r['peer_ms']:8.2f} "
                     f"{r['speed']:5.2f}x {r['kernels_ms']:8.2f} {r['fastest_ms']:8.2f} "
                     f"{r['projected_ms']:8.2f} {r['projected_speed']:5.2f}x {peak}")
    lines.append("geomean: measured {:.3f}x, fastest known {:.3f}x, peak bound {:.3f}x; "
                 "target {:.2f}x".format(
                     geomean([r["speed"] for r in rows]),
                     geomean([r["projected_speed"] for r in rows]),
                     geomean([r["peak_speed"] for r in rows if r["peak_speed"]]), target))
    need, near = needed_elsewhere(rows, target, "speed")
    if need:
        at_bound, _ = needed_elsewhere(rows, target, "peak_speed")
        names = ", ".join(r["model"] for r in near) or "no model"
        lines.append(f"near their peak (at least {NEAR_PEAK:.0%} of it): {names}; for "
                     f"{target:.2f}x the others would each need {need:.2f}x the faster peer "
                     f"with those as measured, {at_bound:.2f}x with those at their bound")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True, help="bench/accept_models.sh's results")
    parser.add_argument("--artifacts", required=True, help="its out/accept-models-STEP")
    parser.add_argument("--db", default="bench/results/records.db", help="the record store")
    parser.add_argument("--plan-db", help="the run's own store (accept_models.sh's "
                        "bench/results/accept_models_trials.db for --trials 32)")
    parser.add_argument("--target", type=float, default=1.2)
    parser.add_argument("--models", nargs="*", help="model names to keep (default: batch 1's)")
    args = parser.parse_args()
    try:
        entries = load_json(args.json)
        if not isinstance(entries, list):
            raise ValueError("not a list of models")
        db, plan_db = (sqlite3.connect(f"file:{path}?mode=ro", uri=True) if path else None
                       for path in (args.db, args.plan_db))
        folders = [os.path.join(args.artifacts, model_name(e)) for e in entries]
        reports = [report_of(f) for f in folders]
        peak = machine_peak(reports)
        rows = [model_row(db, plan_db, e, f, r, peak)
                for e, f, r in zip(entries, folders, reports)]
        rows = [r for r in rows if (r["model"] in args.models if args.models else r["batch"] == 1)]
        if not rows:
            raise ValueError("no model to compare")
    except (OSError, ValueError, KeyError, TypeError, sqlite3.Error) as e:
        sys.exit(f"trials_ceiling: {type(e).__name__}: {e}")
    print(table(rows, args.target))


if __name__ == "__main__":
    main()
