"""Calls of functions of scalars from host code on the CPU backend run as register
programs (exec/cpu/eval.c, host_call): the same values as the statement walker
(CUK_NO_HOST_PROGS=1), the same errors."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk

SRC = """
fn fib(n: i64) -> i64 {
    if n < 2 {
        return n;
    }
    return fib(n - 1) + fib(n - 2);
}
fn down(n: i64) -> i64 {
    if n == 0 {
        return 0;
    }
    return down(n - 1) + 1;
}
fn poly(x: f32, k: i32) -> f32 {
    var s: f32 = 0.0;
    for i in 0..i64(k) {
        s = s * x + f32(i);
    }
    return s;
}
fn twice_fib(x: f32[n]) -> f32[n] = x * f32(fib(10));
"""


def test_values_and_errors():
    m = cuk.compile(SRC, device="cpu")
    assert m.fib(25) == 75025
    assert m.down(900) == 900
    np.testing.assert_allclose(m.poly(np.float32(0.5), 6), ((((0 * .5 + 1) * .5 + 2) * .5 + 3) * .5 + 4) * .5 + 5,
                               rtol=1e-6)
    np.testing.assert_array_equal(m.twice_fib(np.ones(3, np.float32)), np.full(3, 55, np.float32))
    with pytest.raises(cuk.Error, match="recursion too deep: more than 1000 nested calls"):
        m.down(5000)
    assert m.fib(20) == 6765  # usable after the error


CHILD = """
import sys, cukpath, cuk
m = cuk.compile(open(sys.argv[1]).read(), device="cpu")
print(m.fib(22), m.down(300), repr(float(m.poly(1.25, 9))))
try:
    m.down(2000)
except cuk.Error as e:
    print(str(e).splitlines()[0])
"""


def test_same_as_the_walker(tmp_path):
    src = tmp_path / "p.cuk"
    src.write_text(SRC)
    outs = []
    for off in ("", "1"):
        env = cukpath.python_child_env()
        env.pop("CUK_NO_HOST_PROGS", None)
        if off:
            env["CUK_NO_HOST_PROGS"] = off
        r = subprocess.run([sys.executable, "-c", CHILD, str(src)], cwd=os.path.dirname(cukpath.__file__),
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    assert outs[0].splitlines()[0].startswith("17711 300 ")
