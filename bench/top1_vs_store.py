#!/usr/bin/env python3
"""Where a compiled model's schedules rank among the store's measurements, without timing.

For each task of an artifact's plan.json, looks up the plan's schedule among the records the
store holds for that task on the plan's hardware: its rank and median when it was measured,
beside the task's fastest. Timing whole models on a shared host swings by 2x; this compares
two checkpoints' zero-measurement choices on the tasks they were trained on with numbers
that do not move (the records' own medians). Tasks whose chosen schedule was never measured
are listed as unmeasured and left out of the sums.

  python3 bench/top1_vs_store.py --db bench/results/records.db A/plan.json [B/plan.json]

With two plans (two checkpoints compiling the same model), the sums are over the tasks where
both schedules were measured, so they compare like with like.

With --cold, a task's records timed cold (the plan's hardware + "/cold-weights", DESIGN.md's
measurement protocol) are looked up where the task has any, else its warm ones: what
fine-tuning learns from. Without it, only warm records.
"""
import argparse
import json
import sqlite3
import sys


def task_records(db, spec, hardware, cold):
    """The task's ok records on `hardware`, fastest first: cold ones first when `cold`."""
    for fingerprint in ([hardware + "/cold-weights"] if cold else []) + [hardware]:
        records = db.execute(
            "select median_ms, decisions from records where task_spec=? and hardware=? "
            "and status='ok' order by median_ms", (spec, fingerprint)).fetchall()
        if records:
            return records
    return []


def looked_up(db, plan_path, cold):
    with open(plan_path) as f:
        plan = json.load(f)
    rows = {}
    for task in plan["tasks"]:
        records = task_records(db, task["spec"], plan["hardware"], cold)
        mine = json.dumps(task["decisions"], separators=(",", ":"))
        rank = next((i for i, r in enumerate(records) if r[1] == mine), None)
        rows[task["spec"]] = {
            "uses": task["count"],
            "best_ms": records[0][0] if records else None,
            "measured": len(records),
            "rank": rank,
            "ms": records[rank][0] if rank is not None else None,
        }
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="bench/results/records.db")
    parser.add_argument("--cold", action="store_true",
                        help="cold-timed records where a task has them, else warm ones")
    parser.add_argument("plans", nargs="+", help="one or two plan.json files")
    args = parser.parse_args()
    if len(args.plans) > 2:
        sys.exit("top1_vs_store: give one or two plan.json files")
    try:
        db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        tables = [looked_up(db, p, args.cold) for p in args.plans]
    except (OSError, ValueError, KeyError, sqlite3.Error) as e:
        sys.exit(f"top1_vs_store: {type(e).__name__}: {e}")
    sums = [0.0] * len(tables)
    best_sum, compared, unmeasured = 0.0, 0, 0
    for spec, first in tables[0].items():
        rows = [t.get(spec) for t in tables]
        cells = []
        for r in rows:
            cells.append("     -" if r is None or r["rank"] is None else
                         f"{r['ms']:6.3f} #{r['rank']:<3}")
        best = first["best_ms"]
        print(f"{'  '.join(cells)}  best {best if best else float('nan'):6.3f} "
              f"(n={first['measured']}) x{first['uses']} {spec}")
        if any(r is None or r["rank"] is None for r in rows):
            unmeasured += 1
            continue
        compared += 1
        best_sum += best * first["uses"]
        for k, r in enumerate(rows):
            sums[k] += r["ms"] * r["uses"]
    totals = ", ".join(f"{p}: {s:.2f} ms" for p, s in zip(args.plans, sums))
    print(f"over {compared} tasks measured in every plan ({unmeasured} not): {totals}; "
          f"the store's fastest {best_sum:.2f} ms")


if __name__ == "__main__":
    main()
