"""Compares a program's output with the `// EXPECT: line` comments of a test file,
numbers to a relative tolerance (`// RTOL: x`, default 1e-5; `// ATOL: x`, default 0),
everything else exactly. For results whose last digits depend on summation order.
Usage: cukc run t.cuk | approx.py t.cuk"""
import math
import re
import sys

TOKEN = re.compile(r"[\[\]]|[^\s\[\]]+")


def parse_num(tok):
    try:
        return float(tok)
    except ValueError:
        return None


def close(a, b, rtol, atol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def main():
    src = open(sys.argv[1]).read().splitlines()
    want = [m.group(1) for m in (re.match(r"\s*// EXPECT:\s?(.*)$", l) for l in src) if m]
    rtol = float(next((m.group(1) for m in (re.match(r"\s*// RTOL:\s*(\S+)", l) for l in src) if m), 1e-5))
    atol = float(next((m.group(1) for m in (re.match(r"\s*// ATOL:\s*(\S+)", l) for l in src) if m), 0))
    got = sys.stdin.read().splitlines()
    bad = []
    if len(got) != len(want):
        bad.append("expected %d lines of output, got %d" % (len(want), len(got)))
    for k, (g, w) in enumerate(zip(got, want)):
        gt, wt = TOKEN.findall(g), TOKEN.findall(w)
        ok = len(gt) == len(wt)
        for a, b in zip(gt, wt):
            x, y = parse_num(a), parse_num(b)
            if x is not None and y is not None:
                ok = ok and close(x, y, rtol, atol)
            else:
                ok = ok and a == b
        if not ok:
            bad.append("line %d: got %r, expected %r (rtol %g)" % (k + 1, g, w, rtol))
    if bad:
        sys.stderr.write("\n".join(bad) + "\n--- output was:\n" + "\n".join(got) + "\n")
        sys.exit(1)


main()
