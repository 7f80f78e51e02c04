"""Statements too heavy for one kernel's compile time are cut before fusion
(compiler/split.c; issue 19), and the cut changes no value: wide sums of sin terms, of
many inputs, a reduction of such a sum and a sum whose terms share an operand, on the
CPU backend and, where one is usable, the GPU, against NumPy computing the same terms in
the same order. tests/lit/limits/kernel_weight.cuk pins the structure."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])


def tree(items):
    while len(items) > 1:
        items = ["(%s + %s)" % (items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def tree_np(vals):
    while len(vals) > 1:
        vals = [vals[i] + vals[i + 1] if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
    return vals[0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("terms", [8, 64, 200])
def test_wide_sum_of_sins(device, terms):
    m = cuk.compile("fn f(x: f32[n]) -> f32[n] = %s;\n"
                    "fn g(x: f32[n]) -> f32 = sum(%s);\n" % (tree(["sin(x * %d.0)" % k for k in range(terms)]),
                                                             tree(["sin(x * %d.0)" % k for k in range(terms)])),
                    device=device)
    x = np.linspace(-1, 1, 1025, dtype=np.float32)
    want = tree_np([np.sin(x * np.float32(k)) for k in range(terms)])
    got = m.f(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * terms)
    np.testing.assert_allclose(m.g(x), want.astype(np.float64).sum(), rtol=1e-4, atol=1e-3 * terms)


@pytest.mark.parametrize("device", DEVICES)
def test_many_inputs(device):
    k = 600
    m = cuk.compile("fn f(%s) -> f32[n] = %s;\n" % (", ".join("x%d: f32[n]" % i for i in range(k)),
                                                    tree(["x%d" % i for i in range(k)])), device=device)
    rng = np.random.default_rng(5)
    xs = [rng.integers(-100, 100, 33).astype(np.float32) for _ in range(k)]
    np.testing.assert_array_equal(m.f(*xs), tree_np(xs))  # small integers: exact in f32


@pytest.mark.parametrize("device", DEVICES)
def test_shared_operand_across_the_cut(device):
    # every term reads e, which is itself heavy: the cut statements all see one e
    src = ("fn f(x: f32[n]) -> f32[n] {\n    let e = %s;\n    return %s;\n}\n"
           % (tree(["sin(x * %d.0)" % k for k in range(20)]), tree(["cos(e * %d.0)" % k for k in range(40)])))
    m = cuk.compile(src, device=device)
    x = np.linspace(-1, 1, 257, dtype=np.float32)
    e = tree_np([np.sin(x * np.float32(k)) for k in range(20)])
    want = tree_np([np.cos(e * np.float32(k)) for k in range(40)])
    np.testing.assert_allclose(m.f(x), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_var_accumulation_chains(device):
    """`s = s + x_i` over many inputs: forwarded sets (a few kernels, not one per
    assignment) give the sum in the order written."""
    k = 300
    src = ("fn f(%s) -> f32[n] {\n    var s = x0;\n" % ", ".join("x%d: f32[n]" % i for i in range(k))
           + "".join("    s = s * 0.5 + x%d;\n" % i for i in range(1, k)) + "    return s;\n}\n")
    m = cuk.compile(src, device=device)
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(1025).astype(np.float32) for _ in range(k)]
    want = xs[0]
    for i in range(1, k):
        want = want * np.float32(0.5) + xs[i]
    np.testing.assert_array_equal(m.f(*xs), want)  # no FMA on either backend: the same bits
