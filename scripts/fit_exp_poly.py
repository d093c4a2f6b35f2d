"""Fit the polynomial of the inline f32 exp (af_kernel_exp.inc): exp(s) ~= 1 + s + s^2 P(s) on |s| <= ln2/2.

Method: Lawson's algorithm (iteratively reweighted least squares converging to the minimax solution of a linear
approximation problem; C. L. Lawson, "Contributions to the theory of linear least maximum approximation", 1961)
on Chebyshev points of the interval, minimizing the RELATIVE error of the whole expression: P(s) approximates
g(s) = (exp(s) - 1 - s) / s^2 with weight s^2 / exp(s). Reference values come from mpmath at 40 digits; the
least-squares solves run in float64 (the errors fitted are ~1e-9, far above float64's resolution).

The coefficients are then rounded to float one at a time, lowest order first (the largest share of the result),
refitting the remaining higher-order ones in float64 after each rounding, so the rounding of one is partly absorbed
by the others. Prints the float coefficients (C hex-float literals) and the relative error of the float polynomial
evaluated in float64 (the approximation error alone; the f32 evaluation's rounding comes on top and is measured by
tests/cpp/test_kernel_exp.cpp over every float input).

With --table N it also prints the table of the table-driven exp (session 13): 2^(j/N) for j = 0..N-1 as a pair
of floats hi + lo (hi = 2^(j/N) rounded to float, lo = the remainder rounded to float; the pair carries ~48 bits),
from mpmath at 40 digits. The exp in af_kernel_exp.inc uses N = 16 (one 16-lane vpermps per half) with P of degree 1
on |s| <= ln2/32: `--degree 1 --halfwidth 0.0216608 --table 16`.

Usage: python scripts/fit_exp_poly.py [--degree 4] [--points 4000] [--halfwidth 0.34658] [--table N]
"""
import argparse

import mpmath
import numpy as np


def target(s_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """g(s) = (exp(s) - 1 - s) / s^2 and exp(s) at each point (mpmath, 40 digits; g(0) = 1/2)."""
    mpmath.mp.dps = 40
    g, e = [], []
    for s in s_points:
        ms = mpmath.mpf(float(s))
        ex = mpmath.exp(ms)
        g.append(float((ex - 1 - ms) / (ms * ms)) if s != 0 else 0.5)
        e.append(float(ex))
    return np.array(g), np.array(e)


def lawson(a: np.ndarray, b: np.ndarray, w: np.ndarray, iters: int = 400) -> np.ndarray:
    """Weighted minimax fit of a @ c ~= b (error weighted by w) by Lawson's reweighting; returns c."""
    lw = np.full(len(b), 1.0 / len(b))
    c = np.zeros(a.shape[1])
    for _ in range(iters):
        sw = np.sqrt(lw) * w
        c, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        err = np.abs((a @ c - b) * w)
        lw = lw * err
        lw /= lw.sum()
    return c


def to_f32(v: float) -> float:
    """v rounded to the nearest float32."""
    return float(np.float32(v))


def print_table(n: int) -> None:
    """Prints 2^(j/n) for j = 0..n-1 as float pairs (hi, lo), hi + lo = 2^(j/n) to ~2^-48 relative."""
    mpmath.mp.dps = 40
    his, los = [], []
    for j in range(n):
        v = mpmath.power(2, mpmath.mpf(j) / n)
        hi = to_f32(float(v))
        his.append(hi)
        los.append(to_f32(float(v - mpmath.mpf(hi))))
    print(f"2^(j/{n}) hi: " + ", ".join(f"{h.hex()}f" for h in his))
    print(f"2^(j/{n}) lo: " + ", ".join(f"{v.hex()}f" for v in los))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--degree", type=int, default=4, help="degree of P (the whole polynomial has degree + 2)")
    ap.add_argument("--points", type=int, default=4000, help="Chebyshev points on the interval")
    ap.add_argument("--halfwidth", type=float, default=0.34658, help="fit on [-h, h] (ln2/2 = 0.346574)")
    ap.add_argument("--table", type=int, default=0, help="also print 2^(j/N), j < N, as float pairs hi + lo")
    args = ap.parse_args()
    if args.table:
        print_table(args.table)

    k = np.arange(args.points)
    s = args.halfwidth * np.cos(np.pi * (k + 0.5) / args.points)
    g, ex = target(s)
    w = s * s / ex  # P's error times s^2 is the error of the sum; divided by exp(s): relative
    powers = np.vstack([s**i for i in range(args.degree + 1)]).T

    fixed: list[float] = []
    for i in range(args.degree + 1):
        rest = powers[:, i:]
        rhs = g - (powers[:, :i] @ np.array(fixed) if fixed else 0.0)
        c = lawson(rest, rhs, w)
        fixed.append(to_f32(c[0]))
    c = np.array(fixed)
    poly = 1 + s + s * s * (powers @ c)
    rel = np.max(np.abs(poly / ex - 1))
    print(f"P of degree {args.degree} on [-{args.halfwidth}, {args.halfwidth}], float coefficients (c2 first):")
    for i, v in enumerate(c):
        print(f"  c{i + 2} = {float(v).hex()}  ({v:.9g})")
    print(f"max relative error of 1 + s + s^2 P(s) (float coefficients, float64 evaluation): {rel:.3e}"
          f" = {rel / 2**-24:.4f} ulp at 2^-24")


if __name__ == "__main__":
    main()
