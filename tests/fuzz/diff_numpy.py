#!/usr/bin/python3
"""Differential testing of the CPU backend against NumPy (issue 19): random programs,
each written twice from one random tree, as cuk source and as a NumPy evaluation that
shares nothing with cuk, run on random data of odd sizes; the results must agree.

    diff_numpy.py SEED N [--seconds S]

Each program is one function of three arrays x, y: f64[n] and k: i64[n] (n from 1 to
4099, odd sizes and chunk edges) built from elementwise arithmetic and maths (guarded so
that no NaN arises: sqrt(abs(.)), log(1 + abs(.)), division by 1 + abs(.)), comparisons
and where, integer arithmetic and casts, whole-array reductions broadcast back, scans,
reverse, slices and gathers, and returns an f64[n], an i64[n] or a scalar. Integers and
bools must match exactly (comparisons only see correctly rounded operations, so that
a last-bit difference never flips a branch); floats to 1e-9 relative to the sum of the magnitudes that went
into them (cuk's pairwise and parallel sums round differently from NumPy's, by design).
The last line is "N passed, N failed"; a failing program is printed with its inputs'
seed. Exit status 1 if any failed."""
import math
import os
import random
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import cukpath  # noqa: E402,F401
import cuk  # noqa: E402

R = random.Random()


class E:
    """An expression: its cuk text, its NumPy value (a function of the inputs), its type
    ('f' f64 array, 'i' i64 array, 'b' bool array; 'F', 'I' scalars) and a bound on the
    magnitudes summed into it (for the tolerance)."""

    def __init__(self, src, ev, ty, mag=1.0):
        self.src, self.ev, self.ty, self.mag = src, ev, ty, mag


# Comparisons take only operands whose every operation is correctly rounded in both
# (+ - * /, sqrt, where, moves): a sum, a scan or a libm function may differ in the last
# bit from NumPy's, and a comparison near a tie would then pick the other branch.
EXACT = [False]


def leaf_f():
    c = R.random()
    if c < 0.4:
        return E("x", lambda v: v["x"], "f", 1.0)
    if c < 0.8:
        return E("y", lambda v: v["y"], "f", 1.0)
    return E("f64(k)", lambda v: v["k"].astype(np.float64), "f", 50.0)


def const_f():
    c = R.choice([0.5, 2.0, -1.5, 3.25, 0.1, 7.0])
    return E(repr(c), lambda v, c=c: np.float64(c), "F", abs(c))


def farr(d):
    if d > 3 or R.random() < 0.2:
        return leaf_f()
    c = R.randrange(13)
    if c <= 3:  # + - * with an array or a constant
        a = farr(d + 1)
        b = farr(d + 1) if R.random() < 0.6 else const_f()
        op = R.choice("+-*")
        f = {"+": np.add, "-": np.subtract, "*": np.multiply}[op]
        mag = a.mag + b.mag if op != "*" else a.mag * b.mag
        return E(f"({a.src} {op} {b.src})", lambda v, a=a, b=b, f=f: f(a.ev(v), b.ev(v)), "f", mag)
    if c == 4:  # division by something at least 1 in size
        a, b = farr(d + 1), farr(d + 1)
        return E(f"({a.src} / (1.0 + abs({b.src})))", lambda v, a=a, b=b: a.ev(v) / (1.0 + np.abs(b.ev(v))), "f", a.mag)
    if EXACT[0] and c in (5, 7, 9, 10):
        c = 6
    if c == 5:
        a = farr(d + 1)
        fn, nf = R.choice([("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh)])
        return E(f"{fn}({a.src})", lambda v, a=a, nf=nf: nf(a.ev(v)), "f", 1.0)
    if c == 6:
        a = farr(d + 1)
        return E(f"sqrt(abs({a.src}))", lambda v, a=a: np.sqrt(np.abs(a.ev(v))), "f", math.sqrt(a.mag) + 1)
    if c == 7:
        a = farr(d + 1)
        return E(f"log(1.0 + abs({a.src}))", lambda v, a=a: np.log(1.0 + np.abs(a.ev(v))), "f", a.mag)
    if c == 8:  # where on a comparison
        p, a, b = barr(d + 1), farr(d + 1), farr(d + 1)
        return E(f"where({p.src}, {a.src}, {b.src})", lambda v, p=p, a=a, b=b: np.where(p.ev(v), a.ev(v), b.ev(v)), "f",
                 max(a.mag, b.mag))
    if c == 9:  # a whole-array reduction broadcast back
        a, b = farr(d + 1), farr(d + 1)
        red, nr = R.choice([("sum", np.sum), ("max", np.max), ("min", np.min), ("mean", np.mean)])
        n_mag = a.mag * (4099 if red == "sum" else 1)
        return E(f"({b.src} + {red}({a.src}))", lambda v, a=a, b=b, nr=nr: b.ev(v) + nr(a.ev(v)), "f", b.mag + n_mag)
    if c == 10:  # a scan
        a = farr(d + 1)
        sc, ns = R.choice([("cumsum", np.cumsum), ("cummax", np.maximum.accumulate), ("cummin", np.minimum.accumulate)])
        return E(f"{sc}({a.src})", lambda v, a=a, ns=ns: ns(a.ev(v)), "f", a.mag * (4099 if sc == "cumsum" else 1))
    if c == 11:  # reverse, or a gather by a permutation of the positions
        a = farr(d + 1)
        if R.random() < 0.5:
            return E(f"reverse({a.src})", lambda v, a=a: a.ev(v)[::-1], "f", a.mag)
        s = R.choice([3, 7, 11])
        return E(f"{a.src}[(iota(len(x)) * {s} + 1) % len(x)]",
                 lambda v, a=a, s=s: a.ev(v)[(np.arange(len(v["x"])) * s + 1) % len(v["x"])], "f", a.mag)
    # concat of two slices that keep the length
    a = farr(d + 1)
    return E(f"concat({a.src}[1:], {a.src}[0:1])", lambda v, a=a: np.concatenate([a.ev(v)[1:], a.ev(v)[:1]]), "f", a.mag)


def iarr(d):
    if d > 3 or R.random() < 0.3:
        return E("k", lambda v: v["k"], "i")
    c = R.randrange(5)
    a = iarr(d + 1)
    if c == 0:
        m = R.choice([2, 3, 5, 7])
        return E(f"({a.src} * {m} + 1)", lambda v, a=a, m=m: a.ev(v) * m + 1, "i")
    if c == 1:
        m = R.choice([3, 5, 16])
        # cuk's % is C's remainder (the dividend's sign: docs/language.md), NumPy's fmod
        return E(f"({a.src} % {m})", lambda v, a=a, m=m: np.fmod(a.ev(v), m), "i")
    if c == 2:
        b = iarr(d + 1)
        return E(f"maximum({a.src}, {b.src})", lambda v, a=a, b=b: np.maximum(a.ev(v), b.ev(v)), "i")
    if c == 3:
        return E(f"cumsum({a.src})", lambda v, a=a: np.cumsum(a.ev(v)), "i")
    p = barr(d + 1)
    return E(f"where({p.src}, {a.src}, -{a.src})", lambda v, p=p, a=a: np.where(p.ev(v), a.ev(v), -a.ev(v)), "i")


def exact_farr(d):
    was, EXACT[0] = EXACT[0], True
    try:
        return farr(d)
    finally:
        EXACT[0] = was


def barr(d):
    c = R.randrange(3)
    if c == 0 or d > 3:
        a, b = exact_farr(d + 1), exact_farr(d + 1)
        op = R.choice(["<", ">", "<=", ">="])
        f = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal}[op]
        return E(f"({a.src} {op} {b.src})", lambda v, a=a, b=b, f=f: f(a.ev(v), b.ev(v)), "b")
    if c == 1:
        a = iarr(d + 1)
        m = R.choice([2, 3])
        return E(f"({a.src} % {m} == 0)", lambda v, a=a, m=m: np.fmod(a.ev(v), m) == 0, "b")
    p, q = barr(d + 1), barr(d + 1)
    op = R.choice(["&&", "||"])
    f = np.logical_and if op == "&&" else np.logical_or
    return E(f"({p.src} {op} {q.src})", lambda v, p=p, q=q, f=f: f(p.ev(v), q.ev(v)), "b")


def program():
    c = R.randrange(5)
    if c <= 1:
        e = farr(0)
        return "f64[n]", e
    if c == 2:
        e = iarr(0)
        return "i64[n]", e
    if c == 3:
        a = farr(0)
        red, nr = R.choice([("sum", np.sum), ("max", np.max), ("min", np.min)])
        return "f64", E(f"{red}({a.src})", lambda v, a=a, nr=nr: nr(a.ev(v)), "F", a.mag * (4099 if red == "sum" else 1))
    a = iarr(0)
    return "i64", E(f"sum({a.src})", lambda v, a=a: np.sum(a.ev(v)), "I")


def agree(got, want, mag):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "iub":
        return np.array_equal(got, want)
    both_nan = np.isnan(got) & np.isnan(want)
    ok = both_nan | (got == want) | (np.abs(got - want) <= 1e-9 * (np.abs(want) + mag))
    return bool(np.all(ok))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seed, n = int(args[0]), int(args[1])
    limit = None
    if "--seconds" in sys.argv:
        limit = float(sys.argv[sys.argv.index("--seconds") + 1])
    R.seed(seed)
    t0 = time.time()
    passed = failed = 0
    for i in range(n):
        if limit and time.time() - t0 > limit:
            break
        rt, e = program()
        src = f"fn f(x: f64[n], y: f64[n], k: i64[n]) -> {rt} = {e.src};\n"
        size = R.choice([1, 2, 3, 31, 64, 65, 127, 1000, 2047, 2048, 2049, 4099])
        rng = np.random.default_rng(seed * 100003 + i)
        v = {"x": rng.standard_normal(size), "y": rng.uniform(-3, 3, size), "k": rng.integers(-40, 40, size)}
        try:
            want = e.ev(v)
            got = cuk.compile(src, device="cpu").f(v["x"], v["y"], v["k"])
            ok = agree(got, want, e.mag)
            why = "" if ok else f"cuk {np.asarray(got)!r:.300}\nNumPy {np.asarray(want)!r:.300}"
        except Exception as ex:  # a compile or run error is a finding too
            ok, why = False, f"{type(ex).__name__}: {ex}"
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL program {i} (seed {seed}, n={size}):\n{src}{why}\n")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
