#!/usr/bin/env python3
"""Row-tiled schedules of softmax, layernorm and rmsnorm, measured and stored.

Session 50 (Zen 4) found one family of row-operation schedules faster than the best stored
record (1.73x in geomean over 99 tasks) and than the shipped model's top-1 (1.8x-3.1x on
the held-out softmax and layernorm shapes; bench/reports/rowop_grid_s50_zen4.txt): the whole row as the column tile, split in
vector-friendly pieces of up to 128 columns; a block of 8-48 rows, 4 at a time in
registers, the blocks run in parallel; the row statistics computed per block
(`location` 2) with one pass over the full row. Columns in multiples of 8 but not 16
(40, 72, 200) get vectors of 8; where the columns are not a multiple of 8 (49, 197), the
rows are the vector dimension instead. The stored records of these tasks came from 24-64
trial searches that never reached the family, so fine-tunes learned slow row operations
from them and flipped near-ties. This script measures the family on each task of a list,
or on a default grid of shapes, and stores the results as `manual` records for
fine-tuning (bench/grid_runner.py: resumable, shows progress).

  python3 bench/rowop_family_grid.py --db bench/results/rowop_grid.db [--tasks FILE]
  python3 bench/rowop_family_grid.py --db bench/results/rowop_grid.db \
      --compare bench/results/records.db --hardware FINGERPRINT
"""
import re

from grid_runner import grid_main

# The row statistics' decisions after the output's eight: location 2 (per row block),
# vector width 1, the reduction split at the whole row, a reduction order, no unroll.
STATISTICS = {
    "softmax": ["2,1,{c},1,0", "2,1,1,0,0"],  # rowsum, rowmax
    "layernorm": ["2,1,{c},2,0", "2,1,{c},1,0"],  # rowvar, rowsum
    "rmsnorm": ["2,1,{c},2,0"],  # rowsq
}


def default_tasks():
    tasks = []
    for rows in (128, 512, 768, 1536, 3072):
        for cols in (49, 64, 80, 96, 112, 128, 197, 256, 384, 512):
            tasks.append(f"softmax:rows={rows},cols={cols}")
    for rows in (32, 64, 128, 197, 256, 512):
        for cols in (256, 384, 512, 768, 1024, 1280, 2048):
            tasks.append(f"layernorm:rows={rows},cols={cols}")
    for rows in (32, 128, 512):
        for cols in (768, 2048, 4096):
            tasks.append(f"rmsnorm:rows={rows},cols={cols}+mul")
    return tasks


def row_blocks(rows, sizes):
    """Row block sizes the space allows (divisors of rows or powers of two) that leave at
    least two blocks to run in parallel."""
    return [b for b in sizes
            if 2 * b <= rows and (rows % b == 0 or b & (b - 1) == 0)]


def grid(spec):
    op = spec.split(":")[0]
    if op not in STATISTICS:
        raise ValueError(f"{spec}: not a row operation ({', '.join(STATISTICS)})")
    d = {k: int(v) for k, v in re.findall(r"(rows|cols)=(\d+)", spec)}
    if len(d) != 2:
        raise ValueError(f"{spec}: needs rows= and cols=")
    rows, cols = d["rows"], d["cols"]
    stats = ",".join(s.format(c=cols) for s in STATISTICS[op])
    wide = (16, 32) if op == "softmax" else (8, 16)
    blocks = row_blocks(rows, (16, 32, 48) if op == "softmax" else (8, 16))
    if cols % 8 == 0:  # vectors along the columns
        step = 16 if cols % 16 == 0 else 8  # pieces of 16k columns, else of 8k
        pieces = {cols} | {next((p for p in range(top, step - 1, -step) if cols % p == 0), cols)
                           for top in (64, 128)}
        for piece in sorted(pieces):
            for block in blocks:
                for width in [w for w in wide if piece % w == 0] or [8]:
                    yield f"{cols},{piece},{block},4,0,{width},1,1,{stats}"
    else:  # vectors along the rows
        for block in row_blocks(rows, (16, 32, 64)):
            for width in (8, 16):
                yield f"{cols},{cols},{block},{width},1,{width},1,1,{stats}"


if __name__ == "__main__":
    grid_main(__doc__, grid, default_tasks)
