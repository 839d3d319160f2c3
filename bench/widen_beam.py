#!/usr/bin/env python3
"""Measure and store the model's beam with some decisions forced to values it never picks.

A model fine-tuned on records can only learn values the records hold. Session 31 found the
Intel default scalar (out.vector_width=1) on large depthwise convolutions, because the
store held widths 1 and 8 for them and never 16, while width 16 was fastest on all 22
depthwise tasks of EfficientNet-B0 and MobileNetV2 (bench/reports/depthwise_width_s31_intel.txt).
This script puts such schedules into the store, so the next fine-tune sees them:

  for each task of --tasks (one spec per line):
    the model's beam of --k (`tlm gen TASK -k K`), each schedule
      as the model wrote it, and with each --force variant applied,
    measured isolated and stored (`tlm measure ... --store --db DB`, method "manual").

  python3 bench/widen_beam.py --tasks T.txt --db records.db --k 8 \
      --force out.vector_width=8 --force out.vector_width=16 \
      --force out.vector_width=16,src.vector_width=16

--model CHECKPOINT takes that checkpoint's beam instead of the host default's (session 45:
a fine-tune's own picks on shapes near a held-out one, so the next fine-tune sees how they run).

A forced value `max` is the largest value `tlm space TASK` lists for that point (session 34:
out.tile1.d3=max keeps every output-channel block of a 1x1 convolution inside the cache tile,
so its spatial loops run outside the channel blocks and each input tile is read once).
A variant that is illegal for a schedule (the space rejects it) is skipped and counted.
Resumable by task: each finished task is appended to --done (default DB.widen-done) and
skipped on a rerun; a schedule the store already holds keeps its first record. Progress
(tasks done / total, ETA) goes to stderr.
"""
import argparse
import os
import subprocess
import sys
import time

TLM = os.environ.get("TLM", "./build/src/cli/tlm")


def point_indices(task):
    """Decision point name -> (index, its largest listed value or None), from `tlm space TASK`
    (a point whose values depend on another's, e.g. "divisors of ...", lists none)."""
    out = subprocess.run([TLM, "space", task], capture_output=True, text=True, check=True).stdout
    names = {}
    for line in out.splitlines()[2:]:
        fields = line.split()
        if len(fields) >= 2 and fields[0].isdigit():
            listed = fields[2] if len(fields) > 2 and fields[2].startswith("{") else ""
            values = [int(v) for v in listed.strip("{}").split(",") if v.strip().isdigit()]
            names[fields[1]] = (int(fields[0]), max(values) if values else None)
    return names


def beam(task, k, model=None):
    command = [TLM, "gen", task, "-k", str(k)] + (["--model", model] if model else [])
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if "log_prob" in line]


def variants(decisions, forces, names):
    """The schedule itself, then each --force applied (duplicates dropped, order kept)."""
    base = decisions.split(",")
    seen, result = set(), []
    for force in [""] + forces:
        d = list(base)
        for assignment in filter(None, force.split(",")):
            name, value = assignment.split("=")
            if name not in names:
                continue
            index, largest = names[name]
            if value == "max" and largest is None:
                d = None  # `max` of a point that lists no values: drop the whole variant
                break
            d[index] = str(largest) if value == "max" else value
        text = ",".join(d) if d else None
        if text and text not in seen:
            seen.add(text)
            result.append(text)
    return result


def measure(task, decisions, db):
    """The result line of one `tlm measure --store`; None when the space rejects the schedule
    or it fails before it is timed (nothing stored)."""
    run = subprocess.run([TLM, "measure", task, "--method", "space", "--decisions", decisions,
                          "--store", "--db", db], capture_output=True, text=True)
    text = (run.stdout + run.stderr).strip().splitlines()
    if run.returncode != 0 and not any(" in " + db in line for line in text):
        return None  # illegal for this schedule (the space check) or failed to build
    return text[0] if text else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--model", default=None, help="checkpoint whose beam (default: the host's)")
    parser.add_argument("--force", action="append", default=[],
                        help="NAME=VALUE[,NAME=VALUE]: one variant of each beam schedule")
    parser.add_argument("--done", default=None, help="file listing finished tasks (resume)")
    args = parser.parse_args()
    tasks = [t.strip() for t in open(args.tasks) if t.strip() and not t.startswith("#")]
    done_path = args.done or args.db + ".widen-done"
    done = set(open(done_path).read().split()) if os.path.exists(done_path) else set()
    todo = [t for t in tasks if t not in done]
    started, measured, skipped = time.time(), 0, 0
    for i, task in enumerate(todo):
        names = point_indices(task)
        for decisions in beam(task, args.k, args.model):
            for candidate in variants(decisions, args.force, names):
                line = measure(task, candidate, args.db)
                if line is None:
                    skipped += 1
                    continue
                measured += 1
                print(f"{task} {candidate} {line.split(': ', 1)[-1]}", flush=True)
        with open(done_path, "a") as f:
            f.write(task + "\n")
        elapsed = time.time() - started
        left = len(todo) - i - 1
        print(f"[{len(tasks) - left}/{len(tasks)}] {measured} measured, {skipped} skipped, "
              f"ETA {elapsed / (i + 1) * left / 60:.1f} min", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
