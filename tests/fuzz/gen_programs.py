#!/usr/bin/python3
"""Random cuk programs from a typed grammar, to hunt crashes, internal errors and wrong
answers beyond what the byte-level fuzzers reach. Besides elementwise maths, every
reduction and scan, slices, gathers, concat, reshape, transposes, dot, host loops and
extreme literals, part 2's segmented reductions and scans (offsets with empty segments,
one element each, one segment), filters, masks, nonzero, histograms, bincount, scatter
and reduce_by_index, it reaches the rare forms on purpose: reshape / transpose / reverse /
concat / slices of scalars and of 0-size arrays, reshape with -1, keepdims on rank 1,
negative and huge slice steps, indices at both ends, concat of one array and of empty
ones, nested calls of functions with size variables, generic reduce and scan with
lambdas (typed, capturing, exclusive, per axis), calls of functions with host loops and
recursion, other element types, and literal edge values (docs/language.md).

  gen_programs.py crash CUKC SEED N [OUT]  each program through `cukc run --device cpu`,
                                           `emit-ir`, `emit-cuda` and `emit-ptx --arch
                                           sm_90` (NVRTC, no GPU needed) with the ASan+UBSan
                                           cukc: a finding is an exit status other than
                                           0, 1 or 3 (0 or 1 for emit-ir and emit-cuda), a
                                           timeout, any sanitizer output, any "internal
                                           error", PTX that NVRTC rejects, or a program
                                           that one command accepts and another rejects
  gen_programs.py diff CUKC SEED N [OUT]   on a GPU machine: run each with --device cpu and
                                           --device gpu and compare the printed values
                                           (integers and bools exactly, floats to 1e-4
                                           relative, NaN equal NaN); $GEN_SECONDS stops
                                           any mode after that many seconds
  gen_programs.py fakegpu CUKC SEED N [OUT]
                                           without a GPU: each program with --device gpu
                                           on the driver-less path ($CUK_LIBCUDA, built
                                           from bench/fake_libcuda.c: copies are real,
                                           kernels do not run), which runs the GPU
                                           executor's host logic (plans, launches, shape
                                           checks, memory): a finding is an exit status
                                           other than 0, 1 or 3, a timeout, sanitizer
                                           output, an internal error, or a compile error
                                           on one backend only (the values are not
                                           compared: no kernel ran). The differential
                                           run's four crashes of 2026-12-07 (seed 11110)
                                           showed here too

The same SEED and N give the same programs and, with the same cukc, the same result:
scripts/check.sh runs `crash` with a fixed seed. Bad programs are written to
OUT/gen-bad/ (OUT defaults to the current directory), and the last line is
"N passed, N failed" (one test per program). Exit status 1 if any was bad.

Forms that hit a known bug outside this script are left out (KNOWN_BUGS below) until
the fix lands; --all generates them too."""
import math
import os
import random
import re
import subprocess
import sys
import time

# Forms left out because they hit a bug being fixed elsewhere: name -> the bug. Remove
# a name once its fix is merged (the programs of a seed then change).
KNOWN_BUGS = {
    # (none at present: the scalar reshape that aborted emit-cuda is fixed, and its form
    # is generated again)
}

args = [a for a in sys.argv[1:] if not a.startswith("--")]
if len(args) < 4 or args[0] not in ("crash", "diff", "fakegpu"):
    sys.exit(__doc__)
mode, C, SEED, N = args[0], args[1], int(args[2]), int(args[3])
OUT = os.path.abspath(args[4] if len(args) > 4 else ".")
EXCLUDED = set() if "--all" in sys.argv else set(KNOWN_BUGS)
R = random.Random(SEED)
DIFF_MODES = ("diff", "fakegpu")  # generate the same programs for a seed: fakegpu repeats diff's

F_UN = "abs sqrt rsqrt exp exp2 log log2 log10 sin cos tan asin acos atan sinh cosh tanh erf floor ceil round trunc".split()
F_BIN = "atan2 pow fmod minimum maximum".split()
RED = "sum prod min max mean".split()
IRED = "sum prod min max".split()
SCANS = "cumsum cumprod cummin cummax".split()
I64_EDGE = ["0", "1", "2", "3", "-1", "7", "1000", "9223372036854775807", "(-9223372036854775807 - 1)", "(1 << 62)",
            "4294967296", "0x7fffffffffffffff", "2147483647", "(1 << 63)"]
F_EDGE = ["0.0", "1.0", "-2.5", "0.5", "1e30", "(0.0 / 0.0)", "(1.0 / 0.0)", "(-1.0 / 0.0)", "3e38", "3.4028235e38", "1e-40",
          "1e-45", "-0.0", "2.5e-3", "1e9", "inf", "-inf", "nan", "pi"]
HUGE_STEP = ["9223372036854775807", "(-9223372036854775807 - 1)", "4611686018427387904", "-4611686018427387904"]


def pick(*xs):
    return R.choice(xs)


def chance(p):
    return R.random() < p


class Ctx:
    """What main has in scope: arrays x, y (f32[n]), iv (i64[n]), m (f32[2, n]), scalars
    s (f32), k (i64), n (i64), and the helper functions of this program."""

    def __init__(self, helpers):
        self.helpers = helpers


def dim():
    return pick("0", "1", "2", "3", "5", "n", "n + 1", "n - 1")


def small_int():
    return pick("0", "1", "2", "3", "-1", "n", "k")


# ---- f32 scalars -------------------------------------------------------------------------

def fsc(d=0):
    c = R.randrange(17)
    if d > 2 or c == 0: return pick("s", *F_EDGE)
    if c == 1: return "%s(%s)" % (pick(*RED), farr(d + 1))
    if c == 2: return "f32(%s(%s))" % (pick("argmin", "argmax", "len"), fq(farr(d + 1)))
    if c == 3: return "reduce(%s, %s)" % (lam2_init(), farr(d + 1))
    if c == 4: return "%s[%s]" % (farr(d + 1), pick("0", "-1", "n - 1", "-n", "n", "k", "(-9223372036854775807 - 1)"))
    if c == 5: return "m[%s, %s]" % (pick("0", "1", "-1", "-2", "2"), pick("0", "-1", "n - 1", "n"))
    if c == 6: return "(%s %s %s)" % (fsc(d + 1), pick("+", "-", "*", "/", "%", "**"), fsc(d + 1))
    if c == 7: return "%s(%s)" % (pick(*F_UN), fsc(d + 1))
    if c == 8: return "f32(%s)" % isc(d + 1)
    if c == 9: return pick("dot(%s, %s)", "(%s @ %s)") % (farr(d + 1), farr(d + 1))
    if c == 10: return "sum(%s, axis=0)" % farr(d + 1)  # rank 1 -> scalar
    if c == 11: return "(%s ? %s : %s)" % (bsc(d + 1), fsc(d + 1), fsc(d + 1))
    if c == 12: return "sq(%s)" % fsc(d + 1)
    if c == 13: return "f32(%s)" % pick("pair(x, %s)" % farr(d + 1), "total(%s)" % fmat(d + 1), "f64(s) * 2.0")
    if c == 14: return "%s(%s)" % (pick("variance", "std", "norm", "ptp", "logsumexp"), farr(d + 1))
    if c == 15: return "transpose(%s)" % fsc(d + 1)  # a scalar's transpose is the scalar
    return "sum(%s)" % fmat(d + 1)


def isc(d=0):
    c = R.randrange(12)
    if d > 2 or c == 0: return pick("k", "n", *I64_EDGE)
    if c == 1: return "%s(%s)" % (pick(*IRED), iarr(d + 1))
    if c == 2: return "%s(%s)" % (pick("argmin", "argmax"), fq(farr(d + 1)))
    if c == 3: return "len(%s)" % pick(farr(d + 1), fmat(d + 1))
    if c == 4: return "(%s %s %s)" % (isc(d + 1), pick("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "**"), isc(d + 1))
    if c == 5: return "i64(%s)" % fsc(d + 1)
    if c == 6: return "reduce(%s, %s, %s)" % (ilam2(), pick("0", "1", "-1"), iarr(d + 1))
    if c == 7: return "%s[%s]" % (iarr(d + 1), pick("0", "-1", "n - 1", "-n", "k"))
    if c == 8: return "%s(%s)" % (pick("fact", "collatz"), pick("k", "n", "3", "-2", "20"))
    if c == 9: return "i64(%s)" % pick("u64(0) - 1", "u32(%s)" % isc(d + 1), "i32(%s)" % isc(d + 1), "i32(1e12)", "u32(-3.7)", "i64(0.0 / 0.0)")
    if c == 10: return "abs(%s)" % isc(d + 1)
    return "(%s ? %s : %s)" % (bsc(d + 1), isc(d + 1), isc(d + 1))


def fq(e):
    """A float operand of a comparison (and of argmin and argmax, which compare). The GPU
    differential (mode diff) compares values rounded to 1/1024: a float sum may
    legitimately round differently there (another order of the same additions), and a
    comparison at exactly that value (a sum that cancels to 0 on one backend and to
    -1.2e-7 on the other) would take the other branch and print another program's output;
    an argmax over values equal in exact arithmetic (two rows' layer norms, seed 10001)
    would pick another of the tied places. Layer norm's operand too: it divides by the
    row's spread, so a row equal in exact arithmetic (two dot products of a ramp's rows,
    seed 17006) turns their last-bit rounding into +-7.5e-5 of opposite signs."""
    return "round((%s) * 1024.0)" % e if mode in DIFF_MODES else e


def bsc(d=0):
    c = R.randrange(6)
    if d > 2 or c == 0: return pick("true", "false", "(s > 0.0)", "(k == n)")
    if c == 1: return "%s(%s)" % (pick("any", "all"), barr(d + 1))
    if c == 2: return "(%s %s %s)" % (fq(fsc(d + 1)), pick("<", "<=", ">", ">=", "==", "!="), fq(fsc(d + 1)))
    if c == 3: return "(%s %s %s)" % (bsc(d + 1), pick("&&", "||", "^", "==", "!="), bsc(d + 1))
    if c == 4: return "!%s" % bsc(d + 1)
    return "isnan(%s)" % fsc(d + 1)


def lam2():
    """A binary f32 lambda or function name, for reduce and scan. The GPU differential
    (mode diff) takes associative ones only: reduce and scan may group the combinations
    in any order (docs/language.md), so "a + b * s" or "sq(a) + b" legitimately give the
    GPU's tree another value than the CPU backend's fold."""
    if mode in DIFF_MODES:
        return pick("|a, b| a + b", "|a, b| maximum(a, b)", "|a, b| a * b", "|a, b| b",
                    "|a: f32, b: f32| minimum(a, b)", "|a, b| (a > b) ? a : b", "add2")
    return pick("|a, b| a + b", "|a, b| maximum(a, b)", "|a, b| a * b", "|a, b| b", "|a: f32, b: f32| minimum(a, b)",
                "|a, b| a + b * s", "|a, b| (a > b) ? a : b", "add2", "|a, b| sq(a) + b")


def lam2_init():
    """A binary f32 lambda and an init for reduce and scan: "lam, init". The GPU differential
    takes the identity of a combine that is not idempotent: the init of a reduction "should be
    its identity" (docs/language.md), and one that is not joins the GPU's tree in another
    place than the CPU's fold, so that `reduce(|a, b| a * b, 3.4028235e38, x)` overflows to
    inf (and inf * 0 to NaN) on one backend only."""
    lam = lam2()
    if mode in DIFF_MODES and lam in ("|a, b| a + b", "add2", "|a, b| a * b"):
        return "%s, %s" % (lam, "1.0" if "*" in lam else pick("0.0", "-0.0"))
    return "%s, %s" % (lam, pick(*F_EDGE))


def ilam2():
    return pick("|a, b| a + b", "|a, b| a ^ b", "|a, b| a * b", "|a: i64, b: i64| a < b ? a : b", "|a, b| a | b", "iadd")


# ---- f32 arrays (usually length n) -----------------------------------------------------------

def empty_f():
    """A 0-size f32 array, rank 1."""
    return pick("zeros(0)", "x[0:0]", "x[5:2]", "x[n:]", "f32(iota(0))", "linspace(0.0, 1.0, 0)", "reshape(zeros(0, 3), -1)",
                "reverse(zeros(0))", "concat(zeros(0), zeros(0))", "zeros(0)[::-1]", "zeros(0)[1:5:2]", "cumsum(zeros(0))",
                "sum(zeros(0, 4), axis=1)", "m[0, 0:0]", "rand(0, seed=3)")


def farr(d=0):
    c = R.randrange(47)
    if d > 2 or c == 0: return pick("x", "y", "iota(n, dtype=f32)", "ones(n)", "m[0]", "m[-1, :]")
    if c == 1: return "%s(%s)" % (pick(*F_UN), farr(d + 1))
    if c == 2: return "%s(%s, %s)" % (pick(*F_BIN), farr(d + 1), pick(farr(d + 1), fsc(d + 1)))
    if c == 3: return "(%s %s %s)" % (farr(d + 1), pick("+", "-", "*", "/", "%", "**"), farr(d + 1))
    if c == 4: return "(%s %s %s)" % (farr(d + 1), pick("+", "-", "*", "/"), fsc(d + 1))
    if c == 5: return "%s(%s%s)" % (pick(*SCANS), farr(d + 1), pick("", ", exclusive=true", ", axis=0", ", axis=-1"))
    if c == 6: return "scan(%s, %s, %s%s)" % (lam2(), fsc(d + 1), farr(d + 1), pick("", ", exclusive=true", ", axis=0"))
    if c == 7: return "reverse(%s)" % farr(d + 1)
    if c == 8: return "%s[%s]" % (farr(d + 1), slice1())
    if c == 9: return "%s[%s]" % (farr(d + 1), pick("iota(3)", "iota(2) * 2", "reverse(iota(n))", "iv % 3", "iota(0)",
                                                  "full(-1, 2)", "reshape(iota(4), 2, 2)[1]"))
    if c == 10: return "concat(%s)" % ", ".join(farr(d + 1) for _ in range(R.randrange(1, 4)))
    if c == 11: return "where(%s, %s, %s)" % (barr(d + 1), farr(d + 1), pick(farr(d + 1), fsc(d + 1)))
    if c == 12: return "full(%s, %s)" % (fsc(d + 1), dim())
    if c == 13: return "linspace(%s, %s, %s)" % (pick(*F_EDGE), pick(*F_EDGE), dim())
    if c == 14: return "%s(%s, seed=%s)" % (pick("rand", "randn"), dim(), pick("0", "1", "7", "(1 << 40)", "-1"))
    if c == 15: return "reshape(%s, %s)" % (pick(farr(d + 1), fmat(d + 1)), pick("-1", "n", "n * 2", "2 * n"))
    if c == 16: return "f32(%s)" % iarr(d + 1)
    if c == 17: return "clamp(%s, %s, %s)" % (farr(d + 1), fsc(d + 1), fsc(d + 1))
    if c == 18: return "map(%s, %s)" % (pick("|v| v * v", "sq", "|v| v + s", "|v: f32| maximum(v, 0.0)", "relu", "sigmoid"), farr(d + 1))
    if c == 19: return "map(%s, %s, %s)" % (pick("|a, b| a * b + 1.0", "add2", "|a, b| atan2(a, b)"), farr(d + 1), farr(d + 1))
    if c == 20: return "%s(%s, axis=%s%s)" % (pick(*RED), fmat(d + 1), pick("0", "1", "-1", "-2"), keepdims_false())
    if c == 21: return "reduce(%s, %s, axis=%s)" % (lam2_init(), fmat(d + 1), pick("0", "1", "-1"))
    if c == 22: return "%s(%s, axis=0, keepdims=true)" % (pick(*RED), farr(d + 1))  # keepdims on rank 1: [1]
    if c == 23: return "reduce(%s, 0.0, %s, axis=0, keepdims=true)" % (lam2(), farr(d + 1))
    if c == 24: return "m[%s, %s]" % (pick("0", "1", "-1", "-2"), slice1())
    if c == 25: return "m[%s, %s]" % (slice1(), pick("0", "-1", "n - 1", "1"))
    if c == 26: return "dot(%s, %s)" % (fmat(d + 1), farr(d + 1))
    if c == 27: return "inner(%s)" % farr(d + 1)
    if c == 28: return "outer(%s, %s)" % (farr(d + 1), farr(d + 1))
    if c == 29: return "loopy(%s, %s)" % (farr(d + 1), small_int())
    if c == 30: return "(%s * grow(%s, %s))" % (farr(d + 1), farr(d + 1), pick("0", "1", "2", "-1"))
    if c == 31: return empty_f()
    if c == 32: return "(%s ? %s : %s)" % (barr(d + 1), farr(d + 1), farr(d + 1))
    if c == 33: return "softmax(%s)" % farr(d + 1)
    if c == 34: return "f32(%s)" % pick("f64(%s) * 0.1" % farr(d + 1), "linspace(0.0, 1.0, n, dtype=f64)", "u32(iota(n))",
                                       "i32(%s)" % farr(d + 1), "u64(iota(n)) - 1")
    if c == 35: return "transpose(%s)[%s]" % (fmat(d + 1), pick("0", "-1", "1"))
    if c == 36 and "scalar-reshape" not in EXCLUDED: return "reshape(%s, %s)" % (fsc(d + 1), pick("1", "-1", "1, 1", "-1, 1"))
    if c == 37: return "scale(%s, %s)" % (farr(d + 1), fsc(d + 1))
    if c == 38: return "lerp(%s, %s, 0.25)" % (farr(d + 1), farr(d + 1))
    # pad, roll, stack (index chains): shift and width edges, every axis form
    if c == 39: return "roll(%s, %s)" % (farr(d + 1), pick("0", "1", "-1", "n", "-n - 2", "k", "9223372036854775807",
                                                         "(-9223372036854775807 - 1)", "i32(k) * 3"))
    if c == 40: return "%s[%s]" % (pick("pad(%s, %s)" % (farr(d + 1), pick("0", "1", "2", "k % 3")),
                                        "pad(%s, 1, value=%s)" % (farr(d + 1), fsc(d + 1))), slice1())
    if c == 41: return "stack(%s, %s%s)[%s]" % (farr(d + 1), farr(d + 1), pick("", ", axis=0", ", axis=-2"),
                                                pick("0", "1", "-1"))
    if c == 42: return pick("stack(%s, %s, axis=1)[:, %s]" % (farr(d + 1), farr(d + 1), pick("0", "-1", "1")),
                            "roll(%s, %s, axis=%s)[%s]" % (fmat(d + 1), pick("1", "-3", "k"), pick("0", "1", "-1"),
                                                          pick("0", "-1", "1")),
                            "roll(%s, %s)[%s]" % (fmat(d + 1), pick("1", "-3", "n + 1"), pick("0", "-1")))
    # part 2: segmented reductions and scans (offsets of every shape: one element each, runs
    # of empty segments, one segment), compaction, histograms, scatters
    if c == 43: return "%s(%s, %s)" % (pick("segsum", "segmax", "segscan", "segfirst", "segmean"), farr(d + 1),
                                       pick("1", "2", "3", "k", "n", "0", "-1", "7"))
    if c == 44: return pick("filter(|v| v > %s, %s)" % (fsc(d + 1), farr(d + 1)),
                            "%s[%s]" % (pick("x", "y"), barr(d + 1)),
                            "f32(nonzero(%s))" % barr(d + 1))
    if c == 45: return "f32(%s)" % pick("histogram(%s, %s, %s, %s)" % (farr(d + 1), pick("1", "3", "10", "n + 1", "k"),
                                                                      pick(*F_EDGE), pick(*F_EDGE)),
                                        "bincount(%s, %s)" % (iarr(d + 1), pick("1", "4", "n + 2", "k")))
    if c == 46: return pick("scatter(%s, %s, %s)" % (farr(d + 1), iarr(d + 1), pick(farr(d + 1), fsc(d + 1))),
                            "reduce_by_index(%s, %s, %s, %s)" % (farr(d + 1), pick("add", "min", "max", "mul"), iarr(d + 1),
                                                                 pick(farr(d + 1), fsc(d + 1))))
    return "sq(%s)" % farr(d + 1)


def keepdims_false():
    return pick("", ", keepdims=false", ", keepdims=true")


def slice1():
    a = pick("", "0", "1", "-1", "n", "-n", "n + 5", "k", "(-9223372036854775807 - 1)", "9223372036854775807")
    b = pick("", "0", "2", "-2", "n", "-1", "n - 1", "(-9223372036854775807 - 1)", "9223372036854775807")
    st = pick("", "1", "2", "-1", "-2", "-3", *HUGE_STEP)
    if not st:
        return "%s:%s" % (a, b)
    return "%s:%s:%s" % (a, b, st)


def iarr(d=0):
    c = R.randrange(14)
    if d > 2 or c == 0: return pick("iv", "iota(n)", "iota(%s)" % dim())
    if c == 1: return "(%s %s %s)" % (iarr(d + 1), pick("/", "%", "<<", ">>", "&", "|", "^", "*", "-", "+", "**"), pick(*I64_EDGE))
    if c == 2: return "i64(%s)" % farr(d + 1)
    if c == 3: return "%s(%s%s)" % (pick("cumsum", "cumprod", "cummax", "cummin"), iarr(d + 1), pick("", ", exclusive=true"))
    if c == 4: return "argmax(%s, axis=%s)" % (fq(fmat(d + 1)), pick("0", "1", "-1"))
    if c == 5: return "full(%s, %s, dtype=i64)" % (pick(*I64_EDGE), dim())
    if c == 6: return "i64(u64(%s) - 1)" % iarr(d + 1)
    if c == 7: return "%s[%s]" % (iarr(d + 1), slice1())
    if c == 8: return "scan(%s, %s, %s)" % (ilam2(), pick("0", "1"), iarr(d + 1))
    if c == 9: return "concat(%s, %s)" % (iarr(d + 1), pick("iota(0)", iarr(d + 1)))
    if c == 10 and R.random() < 0.3: return "roll(%s, %s)" % (iarr(d + 1), pick("1", "-2", "k", "n"))
    if c == 10: return "reverse(%s)" % iarr(d + 1)
    if c == 11: return "i64(i32(%s) * 2147483647)" % iarr(d + 1)
    if c == 12: return "%s(%s, axis=%s%s)" % (pick(*IRED), imat(d + 1), pick("0", "1", "-1"), keepdims_false())
    return "(%s ** %s)" % (iarr(d + 1), pick("2", "-1", "63", "0"))


def imat(d=0):
    return pick("reshape(iota(2 * n), 2, n)", "reshape(%s, 2, -1)" % iarr(d + 1), "i64(%s)" % fmat(d + 1),
                "transpose(reshape(iota(6), 3, 2))", "reshape(iota(0), 0, 4)")


def barr(d=0):
    c = R.randrange(5)
    if d > 2 or c == 0: return "(%s %s %s)" % (fq(farr(d + 1)), pick("<", ">", "==", "!=", "<=", ">="), fq(pick(farr(d + 1), fsc(d + 1))))
    if c == 1: return "isnan(%s)" % farr(d + 1)
    if c == 2: return "(%s %s %s)" % (barr(d + 1), pick("&&", "||", "^", "&", "|"), barr(d + 1))
    if c == 3: return "!%s" % barr(d + 1)
    return "((iv %% %s) == 0)" % pick("2", "3", "0")


def fmat(d=0):
    """A 2-D f32 array, usually (2, n)."""
    c = R.randrange(16)
    if d > 2 or c == 0: return pick("m", "reshape(%s, 2, -1)" % pick("concat(x, y)", "iota(2 * n, dtype=f32)"))
    if c == 1: return "reshape(concat(%s, %s), 2, n)" % (farr(d + 1), farr(d + 1))
    if c == 2: return "transpose(reshape(concat(%s, %s), n, 2))" % (farr(d + 1), farr(d + 1))
    if c == 3: return "%s(%s)" % (pick(*F_UN), fmat(d + 1))
    if c == 4: return "(%s %s %s)" % (fmat(d + 1), pick("+", "-", "*", "/"),
                                      pick(farr(d + 1), fsc(d + 1), "reshape(%s, 2, 1)" % farr(d + 1), fmat(d + 1)))
    if c == 5: return "%s(%s, axis=%s)" % (pick(*SCANS), fmat(d + 1), pick("0", "1", "-1"))
    if c == 6: return "softmax_rows(%s)" % fmat(d + 1)
    if c == 7: return "m[%s, %s]" % (slice1(), slice1())
    if c == 8: return "transpose(%s%s)" % (fmat(d + 1), pick("", ", 1, 0", ", 0, 1"))
    if c == 9: return "concat(%s, %s, axis=%s)" % (fmat(d + 1), fmat(d + 1), pick("0", "1", "-1"))
    if c == 10: return pick("zeros(0, 3)", "zeros(3, 0)", "reshape(zeros(0), 0, 5)", "reshape(zeros(0), -1, 4)",
                            "transpose(zeros(0, 3))", "m[0:0, :]", "m[:, 0:0]", "reshape(zeros(0), 4, -1)")
    if c == 11: return "(reshape(%s, -1, 1) * reshape(%s, 1, -1))" % (farr(d + 1), farr(d + 1))  # broadcast outer
    if c == 12: return "%s(%s, axis=%s, keepdims=true)" % (pick(*RED), fmat(d + 1), pick("0", "1", "-1"))
    if c == 13: return "dot(%s, transpose(%s))" % (fmat(d + 1), fmat(d + 1))
    if c == 14: return "layer_norm(%s, 0.00001)" % fq(fmat(d + 1))
    return "%s[%s]" % (fmat(d + 1), pick("iota(2)", "reverse(iota(2))", "iota(0)", "full(1, 3)"))


# ---- statements and programs -------------------------------------------------------------------

def print_stmt():
    if chance(0.015):  # array operations on scalars that are compile errors
        return "print(%s);" % pick("reverse(%s)" % fsc(), "concat(%s, %s)" % (fsc(), fsc()), "(%s)[0:1]" % fsc(),
                                   "(%s)[0]" % fsc(), "transpose(%s, 0)" % fsc(), "sum(%s, axis=0)" % fsc())
    c = R.randrange(9)
    if c == 0: return "print(%s);" % farr()
    if c == 1: return "print(%s);" % fsc()
    if c == 2: return "print(%s);" % iarr()
    if c == 3: return "print(%s);" % isc()
    if c == 4: return "print(%s);" % fmat()
    if c == 5: return "print(%s);" % pick(barr(), bsc())
    if c == 6: return "print(%s(reshape(%s, %s), axis=%s%s));" % (pick(*RED), farr(), pick("1, -1", "-1, 1", "n, -1", "-1, n"),
                                                                  pick("0", "1", "-1"), keepdims_false())
    if c == 7: return "print(%s);" % pick("f64(%s) / 3.0" % farr(), "u64(%s)" % iarr(), "i32(%s)" % iarr(), "u32(%s) >> 1" % iarr(),
                                          "%s(f64(%s))" % (pick(*RED), farr()), "linspace(0.0, 1.0, %s, dtype=f64)" % dim())
    return "print(%s);" % pick(fmat(), farr(), fsc())


def block(depth=0):
    out = []
    for _ in range(R.randrange(1, 4)):
        c = R.randrange(10)
        if c < 5 or depth > 1:
            out.append(print_stmt())
        elif c == 5:
            out.append("for i in 0..%s { acc = acc + %s; }" % (pick("3", "n", "k", "0", "-2"), pick(farr(), "f32(i)", fsc())))
        elif c == 6:
            out.append("if %s { %s } else { %s }" % (bsc(), " ".join(block(depth + 1)), " ".join(block(depth + 1))))
        elif c == 7:  # (inside an if: a block of its own for w and j)
            out.append("if true { var w = %s; var j = 0; while j < %s { w = %s; j = j + 1; } print(w); }" % (
                pick("x", "y"), pick("3", "n", "k"), pick("w * 0.5 + x", "reverse(w)", "inner(w)", "w[::-1] - y")))
        elif c == 8:
            out.append("if true { let t = %s; print(t[%s]); }" % (farr(), slice1()))
        else:
            out.append("acc = %s;" % pick(farr(), "acc[::-1]", "loopy(acc, %s)" % small_int()))
    return out


HELPERS = """fn sq(v: f32) -> f32 = v * v;
fn add2(a: f32, b: f32) -> f32 = a + b;
fn iadd(a: i64, b: i64) -> i64 = a + b;
fn scale(x: T[n], c: T) -> T[n] = x * c + T(1);
fn inner(x: f32[n]) -> f32[n] = x * f32(n) + 1.0;
fn outer(x: f32[a], y: f32[b]) -> f32[a] = inner(x) + f32(b) * inner(x)[::-1];
fn total(q: f32[r, c]) -> f32 = sum(q) / f32(r * c + 1);
fn pair(x: f32[a], y: f32[b]) -> f32 = sum(inner(x)) * f32(b) + sum(y) * f32(a);
fn loopy(x: f32[n], k: i64) -> f32[n] {
    var acc = x;
    for i in 0..k { acc = acc * 0.5 + inner(x); }
    return acc;
}
fn grow(x: f32[n], k: i64) -> f32 {
    var a = x;
    var i = 0;
    while i < k { a = concat(a, a[::-1]); i = i + 1; }
    return sum(a) + f32(len(a));
}
fn segs(n: i64, w: i64) -> i64[?] {
    let s = maximum(w, 1);
    return concat(iota(1) * 0, minimum((iota(n / s + 1) + 1) * s, n));
}
fn segsum(x: f32[n], w: i64) -> f32[?] = sum(x, segments=segs(n, w));
fn segmax(x: f32[n], w: i64) -> f32[?] = max(x, segments=concat(iota(maximum(w, 0) % 3 + 1) * 0, full(n, 2)));
fn segscan(x: f32[n], w: i64) -> f32[n] = cumsum(x, segments=segs(n, w));
fn segfirst(x: f32[n], w: i64) -> f32[?] = reduce(|a, b| where(a != 0.0, a, b), 0.0, x, segments=segs(n, w));
fn segmean(x: f32[n], w: i64) -> f32[?] = mean(x * 2.0, segments=concat(segs(n, w), full(n, 2)));
fn fact(n: i64) -> i64 {
    if n <= 1 { return 1; }
    return n * fact(n - 1);
}
fn collatz(v: i64) -> i64 {
    var c = 0;
    var i = v;
    while i > 1 && c < 100 {
        if i % 2 == 0 { i = i / 2; } else { i = 3 * i + 1; }
        c = c + 1;
    }
    return c;
}
"""


def prog():
    body = ["    " + s for s in block()]
    n = pick("0", "1", "3", "5", "17")
    return (HELPERS + "fn f(x: f32[n], y: f32[n], iv: i64[n], m: f32[2, n], s: f32, k: i64) {\n    var acc = zeros(n);\n" +
            "\n".join(body) + "\n    print(acc);\n}\nfn main() {\n    let n = %s;\n" % n +
            "    f(rand(n, seed=1) - 0.5, iota(n, dtype=f32), iota(n) - 2, reshape(linspace(-1.0, 1.0, 2 * n), 2, n), %s, %s);\n}\n"
            % (pick(*F_EDGE), pick("0", "1", "2", "3", "-1")))


# ---- running ---------------------------------------------------------------------------------

NUM = re.compile(r"-?(?:nan|inf|[0-9.]+(?:e[-+]?[0-9]+)?)|true|false")


def same(a, b):
    """Printed outputs equal up to float rounding."""
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if x == y:
            continue
        x, y = x.strip("[]"), y.strip("[]")
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if math.isnan(fx) and math.isnan(fy):
            continue
        if fx == fy or abs(fx - fy) <= 1e-4 * max(1.0, abs(fx), abs(fy)):
            continue
        return False
    return True


# Generous: the programs are small (sizes up to 17, loops up to a few dozen turns) and
# take well under a second each, even with the ASan+UBSan cukc.
TIMEOUT = int(os.environ.get("CUK_GEN_TIMEOUT", "300"))  # per command; CUK_GEN_TIMEOUT overrides


def cukc(args, env):
    try:
        r = subprocess.run([C] + args, capture_output=True, timeout=TIMEOUT, env=env, cwd=OUT)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


SANITIZER = re.compile(r"runtime error|Sanitizer|sanitizer|LeakSanitizer")


def crash_check(path, env, stats):
    """Runs the four commands on one program; returns what is wrong with it, or None."""
    res = {}
    for cmd, argv in (("run", ["run", path, "--device", "cpu"]), ("emit-ir", ["emit-ir", path]),
                      ("emit-cuda", ["emit-cuda", path]), ("emit-ptx", ["emit-ptx", path, "--arch", "sm_90"])):
        if cmd == "emit-ptx" and not HAVE_NVRTC:
            continue
        res[cmd] = cukc(argv, env)
    stats[tuple(r[0] for r in res.values())] = stats.get(tuple(r[0] for r in res.values()), 0) + 1
    bad = []
    for cmd, (rc, out, err) in res.items():
        ok = (0, 1, 3) if cmd in ("run", "emit-ptx") else (0, 1)
        if rc not in ok:
            bad.append("%s: exit %s" % (cmd, rc))
        if SANITIZER.search(err):
            bad.append("%s: sanitizer report" % cmd)
        if "internal error" in out or "internal error" in err:
            bad.append("%s: internal error" % cmd)
        if cmd == "emit-ptx" and rc == 3 and "failed to compile" in err:
            bad.append("emit-ptx: NVRTC rejects the emitted CUDA")
    # The front end is shared: a compile error (exit 1) in one command is one in all.
    compiled = {cmd: r[0] != 1 for cmd, r in res.items() if r[0] in (0, 1, 3)}
    if len(set(compiled.values())) > 1:
        bad.append("compile error in some commands only: %s" % ", ".join("%s %s" % (c, res[c][0]) for c in res))
    if not bad:
        return None
    return "; ".join(bad) + "\n" + "\n".join("--- %s (exit %s)\n%s" % (c, r[0], r[2][-1500:]) for c, r in res.items()
                                             if r[0] not in (0, 1) or "internal error" in r[2] or SANITIZER.search(r[2]))


os.makedirs(os.path.join(OUT, "gen-bad"), exist_ok=True)
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:intercept_tls_get_addr=0",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1", CUK_QUIET="1")
env.setdefault("CUK_CACHE_DIR", os.path.join(OUT, "gen-cache"))
if mode == "fakegpu":  # cuBLASLt's own leak when it cannot start on the fake driver (the file says)
    env["LSAN_OPTIONS"] = "print_suppressions=0:suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsan-vendor.supp")
path = os.path.join(OUT, "gen-%d.cuk" % SEED)

HAVE_NVRTC = True
if mode == "crash":
    with open(path, "w") as f:
        f.write("fn main() { print(sum(iota(4, dtype=f32))); }\n")
    rc, _, err = cukc(["emit-ptx", path, "--arch", "sm_90"], env)
    if rc != 0:
        HAVE_NVRTC = False
        print("gen_programs: emit-ptx is skipped, NVRTC does not work here: %s" % err.strip().splitlines()[-1:])

stats, nbad = {}, 0
# GEN_SECONDS: stop after this long (the programs tried are counted), so that a stage with
# a time limit still reports what it ran
DEADLINE = time.time() + float(os.environ["GEN_SECONDS"]) if os.environ.get("GEN_SECONDS") else None
tried = 0
for i in range(N):
    if DEADLINE and time.time() > DEADLINE:
        break
    tried += 1
    src = prog()
    with open(path, "w") as f:
        f.write(src)
    if mode == "crash":
        bad = crash_check(path, env, stats)
    else:  # diff, fakegpu: the program on both backends
        rc1, out1, err1 = cukc(["run", path, "--device", "cpu"], env)
        rc2, out2, err2 = cukc(["run", path, "--device", "gpu"], env)
        stats[(rc1, rc2)] = stats.get((rc1, rc2), 0) + 1
        bad = None
        if mode == "fakegpu":  # no kernel ran: crashes, reports and one-sided compile errors only
            if (rc2 not in (0, 1, 3) or (rc1 == 1) != (rc2 == 1) or SANITIZER.search(err1 + err2)
                    or "internal error" in err1 + err2):
                bad = "cpu exit %s, gpu (driver-less) exit %s\n--- cpu\n%s\n--- gpu\n%s" % (rc1, rc2, err1[-800:],
                                                                                       err2[-1500:])
        # A run-time error on one backend only is a bug too: the other one either missed a
        # check (a silent wrong answer) or failed where it should not.
        elif rc2 not in (0, 1, 3) or rc1 != rc2 or (rc1 == 0 and not same(out1, out2)):
            bad = "cpu exit %s, gpu exit %s\n--- cpu\n%s\n%s\n--- gpu\n%s\n%s" % (rc1, rc2, out1[-1500:], err1[-800:],
                                                                          out2[-1500:], err2[-1500:])
    if bad:
        nbad += 1
        name = os.path.join(OUT, "gen-bad", "%s-%d-%d.cuk" % (mode, SEED, i))
        with open(name, "w") as f:
            f.write(src)
        print("BAD %s: %s" % (name, bad))
if os.path.exists(path):  # not written when the deadline came before the first program
    os.remove(path)
print("%s seed %d: %d programs, %d bad, exit statuses %s%s" % (
    mode, SEED, tried, nbad, " ".join("%s:%d" % ("/".join(map(str, k)), v) for k, v in sorted(stats.items(), key=str)),
    "; left out (known bugs): %s" % ", ".join(sorted(EXCLUDED)) if EXCLUDED else ""))
print("%d passed, %d failed" % (tried - nbad, nbad))
sys.exit(1 if nbad else 0)
