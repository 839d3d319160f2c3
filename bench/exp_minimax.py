#!/usr/bin/env python3
"""The coefficients of bounded_exp's polynomial (src/ops/fast_math.cpp): exp(r) on
[-ln2/2, ln2/2] by the polynomial of a given degree with the least maximum relative error,
found by Lawson's iteratively reweighted least squares on a dense grid (no numpy: a small
normal-equation solve). Prints each degree's coefficients (constant term first, rounded to
float32) and its maximum relative error in double and in float32 Horner evaluation.

    python3 bench/exp_minimax.py [--degrees 4 5 6]
"""
import argparse
import math
import struct


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def solve(a, b):
    """Solves a x = b (a small dense system) by Gaussian elimination with pivoting."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                factor = m[r][col] / m[col][col]
                m[r] = [x - factor * y for x, y in zip(m[r], m[col])]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit(degree, points=4001, iterations=200):
    half = math.log(2) / 2
    xs = [-half + 2 * half * i / (points - 1) for i in range(points)]
    weights = [1.0 / points] * points
    for _ in range(iterations):
        # weighted least squares of the relative error (p(x) - e^x) / e^x
        a = [[0.0] * (degree + 1) for _ in range(degree + 1)]
        b = [0.0] * (degree + 1)
        for x, w in zip(xs, weights):
            scale = w / math.exp(2 * x)
            powers = [x**k for k in range(degree + 1)]
            for i in range(degree + 1):
                b[i] += scale * powers[i] * math.exp(x)
                for j in range(degree + 1):
                    a[i][j] += scale * powers[i] * powers[j]
        coeffs = solve(a, b)
        errors = [abs(sum(c * x**k for k, c in enumerate(coeffs)) / math.exp(x) - 1) for x in xs]
        weights = [max(w * e, 1e-300) for w, e in zip(weights, errors)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return xs, coeffs, max(errors)


def horner_f32(coeffs, x):
    p = f32(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        p = f32(f32(p * x) + f32(c))  # an FMA rounds once; this bounds it from above
    return p


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--degrees", type=int, nargs="+", default=[4, 5, 6])
    args = parser.parse_args()
    for degree in args.degrees:
        xs, coeffs, error = fit(degree)
        rounded = [f32(c) for c in coeffs]
        error32 = max(abs(horner_f32(rounded, f32(x)) / math.exp(f32(x)) - 1) for x in xs)
        print(f"degree {degree}: max relative error {error:.3g} (float32 Horner {error32:.3g})")
        print("  " + ", ".join(f"{c:.9e}" for c in rounded))


if __name__ == "__main__":
    main()
