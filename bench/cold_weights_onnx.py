#!/usr/bin/env python3
"""Two ONNX files that tell a kernel's cold-weight cost from the rest: LAYERS dense layers
(x @ W + b, 128 x 768 -> 768) in a chain, `distinct.onnx` with a weight per layer (read
from memory every inference: 113 MB at 48 layers) and `shared.onnx` with one weight all
layers reuse (in cache after the first). Same tasks, same schedules; the difference in
`tlm run DIR --bench` is what streaming the weights costs.

    /usr/bin/python3 bench/cold_weights_onnx.py OUT_DIR [--layers 48]
"""
import argparse
import os

import torch


class Chain(torch.nn.Module):
    def __init__(self, layers, shared):
        super().__init__()
        count = 1 if shared else layers
        self.linears = torch.nn.ModuleList(torch.nn.Linear(768, 768) for _ in range(count))
        self.layers = layers

    def forward(self, x):
        for i in range(self.layers):
            x = self.linears[i % len(self.linears)](x)
        return x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=48)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    for name, shared in (("distinct", False), ("shared", True)):
        path = os.path.join(args.out, name + ".onnx")
        torch.onnx.export(Chain(args.layers, shared).eval(), torch.randn(1, 128, 768), path,
                          opset_version=13, input_names=["x"], output_names=["y"])
        print(path)


if __name__ == "__main__":
    main()
