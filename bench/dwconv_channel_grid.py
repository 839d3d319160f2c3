#!/usr/bin/env python3
"""Channel-vector schedules of channel-blocked depthwise convolutions, measured and stored.

Session 49 (Zen 4) found the shipped model's top-1 on every channel-blocked dwconv task of
MobileNetV2 and EfficientNet-B0 1.1x-4.6x slower than one family of schedules it rarely
proposes: weights in blocks of 16, the whole 16-channel block as one vector, a register
tile of 4-14 output columns by 1-2 rows, the window unrolled, the input staged per tile.
The store held only 22 such tasks (the zoo's), so the model had little to learn them from.
This script measures that family (tile columns x rows, the legal ones) on each task of a
list, or on the dwconv corpus shapes in blocks of 16, and stores the results as `manual`
records for fine-tuning (bench/grid_runner.py: resumable, shows progress).

  python3 bench/dwconv_channel_grid.py --db bench/results/dwconv_grid.db [--tasks FILE]
  python3 bench/dwconv_channel_grid.py --db bench/results/dwconv_grid.db \
      --compare bench/results/records.db --hardware FINGERPRINT
"""
import re

from grid_runner import grid_main


def corpus_tasks():
    """The dwconv corpus shapes (ops/families/conv.cpp), channel-blocked, with the two
    epilogues of the zoo's blocked dwconvs alternating."""
    tasks = []
    for c in (32, 96, 144, 192, 384, 576, 960):
        for h in (7, 14, 28, 56, 112):
            for r in (3, 5):
                for stride in (1, 2):
                    if c * h * h > 2_000_000:  # the zoo's largest is 96x112x112
                        continue
                    epilogue = "+bias+silu" if (c + h + r + stride) % 2 else "+bias+relu6"
                    tasks.append(f"dwconv2d:n=1,c={c},h={h},w={h},r={r},s={r},stride={stride},"
                                 f"pad={r // 2},dilation=1,in_block=16,out_block=16{epilogue}")
    return tasks


def grid(spec):
    d = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", spec)}
    if not spec.startswith("dwconv2d:") or d.get("in_block") != 16:
        raise ValueError(f"{spec}: not a depthwise convolution in blocks of 16 channels")
    if not {"h", "w", "r", "s", "stride", "pad"} <= d.keys():
        raise ValueError(f"{spec}: needs h, w, r, s, stride and pad")
    wo = (d["w"] + 2 * d["pad"] - d["s"]) // d["stride"] + 1
    ho = (d["h"] + 2 * d["pad"] - d["r"]) // d["stride"] + 1
    for tw in (4, 7, 8, 14):
        for th in (1, 2):
            if wo % tw == 0 and ho % th == 0:
                yield (f"16,16,16,{tw},{tw},{th},{th},1,1,1,1,0,16,1,3,3,"
                       f"{d['r']},{d['s']},1,1,0,4,16")


if __name__ == "__main__":
    grid_main(__doc__, grid, corpus_tasks)
