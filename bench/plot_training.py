#!/usr/bin/python3
"""Learning curve of a `tlm train` run: training and validation loss against steps.

  python3 bench/plot_training.py RUN_DIR [RUN_DIR ...]

Reads RUN_DIR/log.jsonl and writes RUN_DIR/learning_curve.png.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot(run_dir):
    rows = []
    with open(run_dir + "/log.jsonl") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    if not rows:
        sys.exit(f"plot_training: no log lines in {run_dir}/log.jsonl")
    rows.sort(key=lambda r: r["step"])
    steps = [r["step"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [r["loss"] for r in rows], label="training loss (smoothed)")
    ax.plot(steps, [r["validation_loss"] for r in rows], label="validation loss (held-out tasks)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy per decision token")
    ax.set_title(run_dir)
    ax.legend()
    fig.tight_layout()
    path = run_dir + "/learning_curve.png"
    fig.savefig(path, dpi=110)
    print("wrote", path)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for run in sys.argv[1:]:
        plot(run)
