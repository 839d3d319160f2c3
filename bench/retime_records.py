#!/usr/bin/env python3
"""Re-times stored records whose timings a code change made stale, as JSON lines that
`tlm records import FILE --replace` merges (a newer record of a stored schedule replaces
the stored one). Method and checkpoint are kept; `detail` is cleared, since the new timing
is a whole one (a "cut off" note no longer holds).

  python3 bench/retime_records.py --db STORE --out retimed.jsonl --only rows
  tlm records import retimed.jsonl --db STORE --replace

--only rows:    schedules whose output is vectorized (width > 1) along a dim other than
                its innermost, with a register-tile row (out.tile2.d0) of 4-16: since
                session 38 their output stores go along that row (store_vector in
                space/apply_schedule.cpp)
--only cutoff:  records cut off after one run (`runs` 1, "cut off" in `detail`)
Only the warm records of `--hardware`, which must be this machine's. Resumable: schedules
already in --out are skipped. Shows progress and an ETA on stderr.
"""
import argparse
import json
import re
import sqlite3
import subprocess
import sys
import time

TLM = "./build/src/cli/tlm"
TIMING = re.compile(r"ok median ([0-9.e+-]+) ms min ([0-9.e+-]+) ms \((\d+) runs\)")


def point_indices(spec, cache):
    """Index of each decision point of the task's space, by name (`tlm space`). Where the
    output's points sit depends on the kind and which attributes it has, not their values
    or the fused operations, so one task of each such form is asked."""
    form = re.sub(r"=\d+", "", spec.split("+")[0])
    if form not in cache:
        text = subprocess.run([TLM, "space", spec], capture_output=True, text=True).stdout
        cache[form] = {m.group(2): int(m.group(1))
                       for m in re.finditer(r"^\s+(\d+) (\S+)", text, re.M)}
    return cache[form]


def stores_along_rows(spec, decisions, cache):
    points = point_indices(spec, cache)
    if any(p not in points for p in ("out.vector_dim", "out.vector_width", "out.tile2.d0")):
        return False
    return decisions[points["out.vector_dim"]] != 0 and \
        decisions[points["out.vector_width"]] > 1 and \
        4 <= decisions[points["out.tile2.d0"]] <= 16


def selected(rows, only, kinds=None, per_task=0):
    """The records to time again with their decisions, at most `per_task` per task (the
    fastest by their old timing: rows come sorted by task, fastest first)."""
    cache, taken = {}, {}
    for r in rows:
        if kinds and r["task_spec"].split(":")[0] not in kinds:
            continue
        d = json.loads(r["decisions"])
        stale = (only == "cutoff" and r["runs"] == 1 and "cut off" in r["detail"]) or \
            (only == "rows" and stores_along_rows(r["task_spec"], d, cache))
        if not stale or (per_task and taken.get(r["task_key"], 0) >= per_task):
            continue
        taken[r["task_key"]] = taken.get(r["task_key"], 0) + 1
        yield r, d


def retime(record, decisions):
    """The record timed again with `tlm measure`, or None when it fails now."""
    run = subprocess.run([TLM, "measure", record["task_spec"], "--method", "space",
                          "--decisions", ",".join(map(str, decisions)), "--timeout", "20"],
                         capture_output=True, text=True)
    found = TIMING.search(run.stdout + run.stderr)
    if run.returncode != 0 or not found:
        return None
    out = dict(record)
    out["decisions"] = decisions
    out["median_ms"], out["min_ms"] = float(found.group(1)), float(found.group(2))
    out["runs"], out["created"], out["detail"] = int(found.group(3)), time.time(), ""
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", choices=["rows", "cutoff"], required=True)
    ap.add_argument("--kinds", help="task kinds, comma-separated (default: all)")
    ap.add_argument("--per-task", type=int, default=0, help="at most N per task, fastest first")
    ap.add_argument("--hardware", required=True,
                    help="this machine's fingerprint, as its records in the store carry it")
    a = ap.parse_args()
    try:
        db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM records WHERE hardware = ? AND status = 'ok' "
                          "ORDER BY task_key, median_ms", (a.hardware,)).fetchall()
    except sqlite3.Error as e:
        sys.exit(f"retime_records: cannot read records from {a.db}: {e}")
    done = set()
    try:
        with open(a.out) as f:
            for line in f:
                r = json.loads(line)
                done.add((r["task_key"], tuple(r["decisions"])))
    except FileNotFoundError:
        pass
    kinds = a.kinds.split(",") if a.kinds else None
    todo = [(dict(r), d) for r, d in selected(rows, a.only, kinds, a.per_task)
            if (r["task_key"], tuple(d)) not in done]
    print(f"retime_records: {len(todo)} records to time ({len(done)} already in {a.out})",
          file=sys.stderr)
    start, failed = time.time(), 0
    with open(a.out, "a") as out:
        for i, (record, decisions) in enumerate(todo, 1):
            record.pop("id", None)
            new = retime(record, decisions)
            if new is None:
                failed += 1
            else:
                out.write(json.dumps(new, sort_keys=True) + "\n")
                out.flush()
            eta = (time.time() - start) / i * (len(todo) - i)
            print(f"\r  {i}/{len(todo)} timed, {failed} failed, ETA {eta / 60:.0f} min ",
                  end="", file=sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
