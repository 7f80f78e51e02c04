#!/usr/bin/python3
"""Random cuk programs from a small grammar (elementwise maths, reductions, scans,
slices with extreme steps, gathers, concat, reshape, generic lambdas, host loops, extreme
literals), to hunt crashes and wrong answers beyond what the byte-level fuzzers reach.

  gen_programs.py crash CUKC SEED N        run each on the CPU backend (use the ASan+UBSan
                                           cukc); report exits other than 0, 1, 3 and any
                                           sanitizer output
  gen_programs.py diff CUKC SEED N         on a GPU machine: run each with --device cpu and
                                           --device gpu and compare the printed values
                                           (integers and bools exactly, floats to 1e-4
                                           relative, NaN equal NaN)
Bad programs are written to ./gen-bad/. Exit status 1 if any was found."""
import math
import os
import random
import re
import subprocess
import sys

mode, C, SEED, N = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
R = random.Random(SEED)
F32UN = "abs sqrt rsqrt exp exp2 log log2 log10 sin cos tan asin acos atan sinh cosh tanh erf floor ceil round trunc".split()
F32BIN = "atan2 pow fmod minimum maximum".split()
RED = "sum prod min max argmin argmax mean".split()
SCAN = "cumsum cumprod cummin cummax".split()
INTS = ["0", "1", "2", "3", "-1", "7", "1000", "9223372036854775807", "(-9223372036854775807 - 1)", "(1 << 62)", "4294967296"]
FLOATS = ["0.0", "1.0", "-2.5", "1e30", "(0.0/0.0)", "(1.0/0.0)", "3e38", "1e-40"]
def dim():
    return R.choice(["0", "1", "2", "3", "5", "n", "n + 1"])
def arr(d=0):
    if d > 3: return R.choice(["x", "y", "iota(n, dtype=f32)", "ones(n)"])
    c = R.randrange(22)
    if c == 0: return "x"
    if c == 1: return "y"
    if c == 2: return "%s(%s)" % (R.choice(F32UN), arr(d+1))
    if c == 3: return "%s(%s, %s)" % (R.choice(F32BIN), arr(d+1), arr(d+1))
    if c == 4: return "(%s %s %s)" % (arr(d+1), R.choice("+-*/%"), arr(d+1))
    if c == 5: return "(%s %s %s)" % (arr(d+1), R.choice("+-*/"), sc(d+1))
    if c == 6: return "%s(%s)" % (R.choice(SCAN), arr(d+1))
    if c == 7: return "scan(|a, b| %s, %s, %s)" % (R.choice(["a + b", "maximum(a, b)", "a * b", "b"]), sc(d+1), arr(d+1))
    if c == 8: return "reverse(%s)" % arr(d+1)
    if c == 9: return "%s[%s:%s:%s]" % (arr(d+1), R.choice(["", "1", "-1", "n"] + INTS[:4]), R.choice(["", "2", "-2", "n"]), R.choice(["", "1", "2", "-1", "-3"] + INTS[-3:]))
    if c == 10: return "%s[%s]" % (arr(d+1), R.choice(["iota(3)", "iota(2) * 2", "reverse(iota(n))", "i64(%s)" % arr(d+1)]))
    if c == 11: return "concat(%s, %s)" % (arr(d+1), arr(d+1))
    if c == 12: return "where(%s > %s, %s, %s)" % (arr(d+1), sc(d+1), arr(d+1), arr(d+1))
    if c == 13: return "full(%s, %s)" % (sc(d+1), dim())
    if c == 14: return "linspace(%s, %s, %s)" % (R.choice(FLOATS), R.choice(FLOATS), dim())
    if c == 15: return "rand(%s, seed=%s)" % (dim(), R.choice(INTS[:6]))
    if c == 16: return "reshape(%s, %s)" % (arr(d+1), R.choice(["-1", "n", "1, -1", "-1, 1"]))
    if c == 17: return "f32(%s)" % iarr(d+1)
    if c == 18: return "clamp(%s, %s, %s)" % (arr(d+1), sc(d+1), sc(d+1))
    if c == 19: return "sum(reshape(%s, -1, 1), axis=%s)" % (arr(d+1), R.choice("01"))
    if c == 20: return "map(|v| %s, %s)" % (R.choice(["v * v", "sq(v)", "v + 1.0", "maximum(v, 0.0)"]), arr(d+1))
    return "sq(%s)" % arr(d+1)
def iarr(d=0):
    c = R.randrange(8)
    if c == 0: return "iota(%s)" % dim()
    if c == 1: return "(%s %s %s)" % (iarr(d+1), R.choice(["/", "%", "<<", ">>", "&", "|", "^", "*", "-"]), R.choice(INTS))
    if c == 2: return "i64(%s)" % arr(d+1) if d < 3 else "iota(n)"
    if c == 3: return "%s(%s)" % (R.choice(["cumsum", "cumprod", "cummax"]), iarr(d+1)) if d < 3 else "iota(n)"
    if c == 4: return "argmax(reshape(%s, n, 1), axis=1)" % arr(d+1) if d < 3 else "iota(n)"
    if c == 5: return "full(%s, %s, dtype=i64)" % (R.choice(INTS), dim())
    if c == 6: return "u64(%s)" % "iota(n)"
    return "(%s ** %s)" % (iarr(d+1) if d < 3 else "iota(n)", R.choice(["2", "-1", "63", "0"]))
def sc(d=0):
    c = R.randrange(6)
    if c == 0: return R.choice(FLOATS)
    if c < 3 and d < 4: return "%s(%s)" % (R.choice(RED), arr(d+1)) if R.random() < .5 else "f32(%s(%s))" % (R.choice(["argmin", "argmax", "len"]), arr(d+1))
    if c == 3 and d < 4: return "reduce(|a, b| %s, %s, %s)" % (R.choice(["a + b", "maximum(a, b)", "a * b"]), R.choice(FLOATS), arr(d+1))
    if c == 4 and d < 4: return "%s[%s]" % (arr(d+1), R.choice(["0", "-1", "n - 1", "n", "(-9223372036854775807 - 1)"]))
    return "s"
def mat(d=0):
    """A 2-D f32 array, usually (2, n)."""
    c = R.randrange(7)
    if c == 0: return "reshape(concat(%s, %s), 2, n)" % (arr(d+1), arr(d+1))
    if c == 1: return "transpose(reshape(concat(%s, %s), n, 2))" % (arr(d+1), arr(d+1))
    if c == 2 and d < 3: return "%s(%s)" % (R.choice(F32UN), mat(d+1))
    if c == 3 and d < 3: return "(%s %s %s)" % (mat(d+1), R.choice("+-*/"), R.choice([arr(d+1), sc(d+1), "reshape(%s, 2, 1)" % arr(d+1)]))
    if c == 4 and d < 3: return "%s(%s, axis=%s)" % (R.choice(SCAN), mat(d+1), R.choice("01"))
    if c == 5 and d < 3: return "softmax_rows(%s)" % mat(d+1)
    return "reshape(%s, 2, -1)" % arr(d+1)


def mat_stmt():
    c = R.randrange(7)
    if c == 0: return "print(%s(%s, axis=%s, keepdims=%s));" % (R.choice(RED), mat(), R.choice(["0", "1", "-1"]), R.choice(["true", "false"]))
    if c == 1: return "print(%s);" % mat()
    if c == 2: return "print(dot(%s, %s));" % (mat(), arr())
    if c == 3: return "print(%s[%s, :]);" % (mat(), R.choice(["0", "1", "-1", "2"]))
    if c == 4: return "print(%s[:, %s]);" % (mat(), R.choice(["0", "1", "-1", "n - 1"]))
    if c == 5: return "print(layer_norm(%s, 0.00001));" % mat()
    return "print(reduce(|a, b| %s, %s, %s, axis=%s));" % (R.choice(["a + b", "maximum(a, b)"]), R.choice(FLOATS), mat(), R.choice("01"))


def prog():
    body = []
    for i in range(R.randrange(1, 5)):
        k = R.randrange(5)
        if k == 0: body.append("    print(%s);" % arr())
        elif k == 1: body.append("    print(%s);" % sc())
        elif k == 2: body.append("    print(%s);" % iarr())
        elif k == 3 and R.random() < 0.5: body.append("    " + mat_stmt())
        elif k == 3: body.append("    for i in 0..%s { acc = acc + %s; }" % (R.choice(["3", "n"]), arr()))
        else: body.append("    print(%s(reshape(%s, %s), axis=%s, keepdims=%s));" % (R.choice(RED), arr(), R.choice(["1, -1", "-1, 1", "n, -1"]), R.choice(["0", "1", "-1"]), R.choice(["true", "false"])))
    return ("fn sq(v: f32) -> f32 = v * v;\nfn f(x: f32[n], y: f32[n], s: f32) {\n    var acc = zeros(n);\n" + "\n".join(body) +
            "\n    print(acc);\n}\nfn main() {\n    let n = %s;\n    f(rand(n, seed=1) - 0.5, iota(n, dtype=f32), %s);\n}\n" % (R.choice(["0", "1", "3", "5", "17"]), R.choice(FLOATS)))


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


def run(args, env):
    try:
        r = subprocess.run([C, "run"] + args, capture_output=True, timeout=120, env=env)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=1",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1")
os.makedirs("gen-bad", exist_ok=True)
stats, nbad = {}, 0
for i in range(N):
    src = prog()
    path = "gen-%d.cuk" % SEED
    with open(path, "w") as f:
        f.write(src)
    bad = None
    if mode == "crash":
        rc, out, err = run([path, "--device", "cpu"], env)
        stats[rc] = stats.get(rc, 0) + 1
        if rc not in (0, 1, 3) or "runtime error" in err or "Sanitizer" in err:
            bad = "exit %s\n%s" % (rc, err[-2000:])
    else:
        rc1, out1, err1 = run([path, "--device", "cpu"], env)
        rc2, out2, err2 = run([path, "--device", "gpu"], env)
        stats[(rc1, rc2)] = stats.get((rc1, rc2), 0) + 1
        # A run-time error on one backend only is a bug too: the other one either missed a
        # check (a silent wrong answer) or failed where it should not.
        if rc2 not in (0, 1, 3) or rc1 != rc2 or (rc1 == 0 and not same(out1, out2)):
            bad = "cpu exit %s, gpu exit %s\n--- cpu\n%s\n%s\n--- gpu\n%s\n%s" % (rc1, rc2, out1[-1500:], err1[-800:],
                                                                      out2[-1500:], err2[-1500:])
    if bad:
        nbad += 1
        name = "gen-bad/%s-%d-%d.cuk" % (mode, SEED, i)
        with open(name, "w") as f:
            f.write(src)
        print("BAD %s: %s" % (name, bad))
    os.remove(path)
print("%s seed %d: %d programs, %d bad, exits %s" % (mode, SEED, N, nbad, stats))
sys.exit(1 if nbad else 0)
