#!/usr/bin/env python3
"""How much a perfect pick among the model's beam would gain, without timing anything.

For each task of a compiled model's plan.json, asks the checkpoint for its beam of 8
(`tlm gen TASK -k 8`, the beam behind the top-1) and looks every candidate up among the
store's records for the plan's hardware. Prints, per plan, the sums (weighted by task
count) of the top-1's record median, of the fastest candidate in the beam ("beam best":
what a perfect ranker over the 8 would choose) and of the store's fastest, over the tasks
whose top-1 and at least one candidate were measured.

  python3 bench/beam_vs_store.py --db bench/results/records.db --model models/ID \
      A/plan.json [B/plan.json ...]

`tlm gen` decodes for this machine's hardware: run it on a host of the plan's kind.
"""
import argparse
import json
import sqlite3
import subprocess


def beam(tlm, model, spec):
    """[(decisions, log_prob)] best first."""
    out = subprocess.run([tlm, "gen", spec, "-k", "8", "--model", model], capture_output=True,
                         text=True, check=True).stdout
    candidates = []
    for line in out.splitlines():
        if "log_prob" in line:
            decisions, log_prob = line.split("log_prob")
            values = [int(x) for x in decisions.split(",") if x.strip()]  # none: empty space
            candidates.append((values, float(log_prob)))
    return candidates


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--model", required=True, help="checkpoint folder")
    ap.add_argument("--tlm", default="build/src/cli/tlm")
    ap.add_argument("plans", nargs="+")
    args = ap.parse_args()
    db = sqlite3.connect(args.db)
    for path in args.plans:
        plan = json.load(open(path))
        top1 = best_in_beam = best = 0.0
        left_out = 0
        for task in plan["tasks"]:
            measured = dict(db.execute(
                "select decisions, median_ms from records where task_spec=? and hardware=? "
                "and status='ok'", (task["spec"], plan["hardware"])).fetchall())
            found = [measured.get(json.dumps(d, separators=(",", ":")))
                     for d, _ in beam(args.tlm, args.model, task["spec"])]
            if not found or found[0] is None:
                left_out += 1
                continue
            top1 += found[0] * task["count"]
            best_in_beam += min(ms for ms in found if ms is not None) * task["count"]
            best += min(measured.values()) * task["count"]
        print(f"{path}: top-1 {top1:.2f} ms, beam best {best_in_beam:.2f}, store's fastest "
              f"{best:.2f} ({left_out} tasks left out: top-1 not measured)")


if __name__ == "__main__":
    main()
