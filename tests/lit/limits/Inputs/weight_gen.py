"""Writes a program whose one statement is a balanced sum of many terms (kernel_weight.cuk):
sin N: sin(x * k) for k < N; sumsin N: the sum of that; inputs N: x0 + ... + x<N-1>."""
import sys


def tree(items):
    while len(items) > 1:
        items = ["(%s + %s)" % (items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


kind, n = sys.argv[1], int(sys.argv[2])
if kind == "inputs":
    args = ", ".join("x%d: f32[n]" % i for i in range(n))
    print("fn f(%s) -> f32[n] = %s;" % (args, tree(["x%d" % i for i in range(n)])))
else:
    body = tree(["sin(x * %d.0)" % k for k in range(n)])
    if kind == "sumsin":
        print("fn f(x: f32[n]) -> f32 = sum(%s);" % body)
    else:
        print("fn f(x: f32[n]) -> f32[n] = %s;" % body)
