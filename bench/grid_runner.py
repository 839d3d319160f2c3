"""Measure a fixed family of schedules on each task of a list and store them as `manual`
records: the shared loop and command line of the family grids (bench/dwconv_channel_grid.py,
bench/rowop_family_grid.py). Resumable: a task that already has `manual` records in the
database is skipped. Prints progress (tasks done / total, ETA) and, for a candidate that
fails, the last line of its error. `--compare STORE --hardware FINGERPRINT` prints instead
each task's best of the family against the best STORE holds for that machine. Bad input
(a missing file, a task the family does not cover) is a one-line error and exit status 1."""
import argparse
import math
import os
import sqlite3
import subprocess
import sys
import time


def stored(db, spec):
    try:
        con = sqlite3.connect(db)
        n = con.execute("select count(*) from records where task_spec = ? and method = 'manual'",
                        (spec,)).fetchone()[0]
        con.close()
        return n > 0
    except sqlite3.Error:
        return False


def read_tasks(path):
    """Task specs from a file: the first word of each line, '#' lines skipped."""
    return [l.split()[0] for l in open(path) if l.strip() and not l.startswith("#")]


def run_grid(specs, grid, db, tlm):
    """For each spec, measure every decision string grid(spec) yields and store it in db."""
    start = time.time()
    for i, spec in enumerate(specs):
        if stored(db, spec):
            continue
        ok = 0
        for decisions in grid(spec):
            r = subprocess.run([tlm, "measure", spec, "--decisions", decisions, "--store",
                                "--db", db], capture_output=True, text=True)
            ok += r.returncode == 0
            if r.returncode:
                why = (r.stderr.strip().splitlines() or ["no message"])[-1]
                print(f"  {decisions}: {why}", file=sys.stderr)
        eta = (time.time() - start) / (i + 1) * (len(specs) - i - 1)
        print(f"[{i + 1}/{len(specs)}] {ok} stored, ETA {eta:.0f} s  {spec}", flush=True)


def compare(db, store, hardware):
    """Per task of db, the family's best median against the best stored in `store` for
    `hardware`; prints one line per task and the geomean of stored / family."""
    grid_db, store_db = sqlite3.connect(db), sqlite3.connect(store)
    ratios = []
    for spec, best, decisions in grid_db.execute(
            "select task_spec, min(median_ms), decisions from records where status = 'ok' "
            "group by task_spec order by task_spec"):
        old, n = store_db.execute(
            "select min(median_ms), count(*) from records where task_spec = ? and "
            "hardware = ? and status = 'ok' and method != 'manual'", (spec, hardware)).fetchone()
        ratio = old / best if old else float("nan")
        if old:
            ratios.append(ratio)
        print(f"{spec:44s} family {best:.4f} ms  stored {old or float('nan'):.4f} ms "
              f"({n:4d} records)  {ratio:.2f}x  {decisions}")
    if ratios:
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{len(ratios)} tasks with stored records: stored best / family best, geomean "
              f"{geomean:.2f}x, min {min(ratios):.2f}x, max {max(ratios):.2f}x; family slower "
              f"on {sum(r < 1 for r in ratios)}")


def grid_main(doc, grid, default_tasks):
    """The command line of a family grid: `grid(spec)` yields decision strings (ValueError
    for a task the family does not cover), `default_tasks()` the specs without --tasks."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--db", required=True, help="where the family's records go")
    ap.add_argument("--tasks", help="a file of task specs (first word of each line)")
    ap.add_argument("--tlm", default="./build/src/cli/tlm")
    ap.add_argument("--compare", metavar="STORE",
                    help="instead of measuring: each task's family best against STORE's best")
    ap.add_argument("--hardware", help="with --compare: whose records in STORE (a fingerprint)")
    args = ap.parse_args()
    name = os.path.basename(sys.argv[0])
    try:
        if args.compare:
            if not args.hardware:
                raise ValueError("--compare needs --hardware FINGERPRINT")
            for path in (args.db, args.compare):
                if not os.path.isfile(path):
                    raise ValueError(f"no record store at {path}")
            return compare(args.db, args.compare, args.hardware)
        specs = read_tasks(args.tasks) if args.tasks else default_tasks()
        for spec in specs:  # every task checked before the first measurement
            list(grid(spec))
        run_grid(specs, grid, args.db, args.tlm)
    except (OSError, ValueError, sqlite3.Error) as e:
        sys.exit(f"{name}: error: {e}")
