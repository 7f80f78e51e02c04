"""Generic functions called from Python (cuk.GenericFunction): the program's own
(`fn g(x: T[n]) -> T[n]`) and the stdlib's (softmax, layer_norm, variance, relu, ...) bind
their type variables from the arguments' dtypes, as a call in cuk code does, through a
typed wrapper compiled once per binding; the errors for what cannot bind; and the
program object's generic() and function() for them (cuk_program_generic and
cuk_program_function's message)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk

SRC = """fn g(x: T[n]) -> T[n] = x + x;
fn scaled(x: T[r, c], k: f32) -> T[r, c] = x * T(k);
fn pair(x: T) -> (T, T) = (x, x);
fn plain(x: f32[n]) -> f32 = sum(x);
fn main() { print(g(ones(3))); }
"""


@pytest.fixture
def m():
    return cuk.compile(SRC, device="cpu")


def test_user_generic_f32_and_f64(m):
    assert isinstance(m.g, cuk.GenericFunction) and m.g is m["g"]
    assert repr(m.g) == "<cuk generic function g(x: T[n]) -> T[n]>"
    assert m.g.params == (("x", "T", ("n",)),) and m.g.result == ("T", ("n",))
    for dt in (np.float32, np.float64, np.int32):
        x = np.arange(5, dtype=dt)
        r = m.g(x)
        assert isinstance(r, np.ndarray) and r.dtype == dt
        np.testing.assert_array_equal(r, x + x)
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    r = m.scaled(a, 2.5)  # a Python float for a concrete parameter: T bound by a
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r, a * 2.5)
    assert "g" not in m.functions  # the program's own functions stay the concrete ones


def test_stdlib_softmax_layer_norm_variance(m):
    x = np.linspace(-2, 3, 7, dtype=np.float32)
    r = m.softmax(x)
    want = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, want, rtol=1e-6)
    r64 = m.softmax(x.astype(np.float64))
    assert r64.dtype == np.float64
    np.testing.assert_allclose(r64, want.astype(np.float64), rtol=1e-6)
    # eps is a T: bound by x's T, so a Python float is fine for it
    a = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
    r = m.layer_norm(a, 1e-5)
    mu, var = a.mean(axis=1, keepdims=True), a.var(axis=1, keepdims=True)
    assert r.dtype == np.float32 and r.shape == (3, 4)
    np.testing.assert_allclose(r, (a - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    v = np.array([1.0, 2.0, 4.0, 8.0])
    assert m.variance(v) == pytest.approx(np.var(v))
    assert isinstance(m.variance(v.astype(np.float32)), np.float32)


def test_generic_scalar_function():
    m = cuk.compile("fn k() -> f32 = 1.0;\n", device="cpu")
    r = m.relu(np.float32(-2.0))
    assert r == 0 and isinstance(r, np.float32)
    assert m.relu(np.array(3.5, dtype=np.float32)) == 3.5
    assert m.sigmoid(np.float64(0.0)) == 0.5
    # an array for a scalar parameter applies the function elementwise, as in cuk
    x = np.array([[-1.5, 2.0], [0.5, -3.0]], dtype=np.float32)
    r = m.relu(x)
    assert r.dtype == np.float32 and r.shape == (2, 2)
    np.testing.assert_array_equal(r, np.maximum(x, 0))
    np.testing.assert_allclose(m.lerp(np.float32(1), 3.0, np.array([0, 0.5, 1], np.float32)), [1, 2, 3])


def test_bindings_compile_once_each(m):
    x32, x64 = np.ones(3, np.float32), np.ones(3, np.float64)
    f32 = m.g.specialize(x32)
    f64 = m.g.specialize(x64)
    assert f32 is not f64
    assert f32.params == [("x", "float32", ("n",))] and f64.params == [("x", "float64", ("n",))]
    assert m.g.specialize(np.zeros(7, np.float32)) is f32  # the same binding: compiled once
    m.g(x32), m.g(x64), m.g(x32)
    assert sorted(k for k in m._bound if k[0] == "g") == [("g", ("f32",), (0,)), ("g", ("f64",), (0,))]


def test_python_number_alone_cannot_bind(m):
    with pytest.raises(TypeError, match=r"relu\(\): its element type T is bound from the dtype of argument 'v', and "
                                        r"a Python float has none; .*np\.float32\(x\)"):
        m.relu(2.0)
    with pytest.raises(TypeError, match="a Python list has none"):
        m.softmax([1.0, 2.0])
    with pytest.raises(TypeError, match=r"softmax\(\) takes 1 argument \(2 given\)"):
        m.softmax(np.ones(2), np.ones(2))


def test_binding_cuk_rejects(m):
    with pytest.raises(cuk.CompileError) as e:
        m.softmax(np.arange(3, dtype=np.int32))
    assert str(e.value).startswith("softmax() with T = i32: ")
    assert "'exp' needs floats" in str(e.value)
    assert e.value.message.startswith("softmax() with T = i32: ")
    with pytest.raises(cuk.ArgumentError, match="has dtype <U1, which cuk has no type for"):
        m.softmax(np.array(["a"]))


def test_missing_and_non_callable_names(m):
    with pytest.raises(AttributeError, match="the program has no function 'nothere'"):
        m.nothere
    with pytest.raises(KeyError):
        m["nothere"]
    assert not hasattr(m, "mean")  # a builtin, not a function of the program
    with pytest.raises(AttributeError, match="'pair' is generic and returns a tuple"):
        m.pair
    with pytest.raises(KeyError, match="returns a tuple"):
        m["pair"]
    assert m.plain(np.ones(4, np.float32)) == 4  # concrete functions are Functions, as before
    assert m._program.generic("plain") is None and m._program.generic("nothere") is None
    assert m._program.generic("layer_norm") == ((("x", "T", ("r", "c")), ("eps", "T", ())), ("T", ("r", "c")))


def test_function_message_for_a_generic_name(m):
    # what a C caller of cuk_program_function gets for a generic name
    with pytest.raises(cuk.LogicError) as e:
        m._program.function("softmax")
    assert str(e.value) == ("'softmax' is generic (its element type T is bound at each call); to call it on its own, "
                            "add a typed wrapper to the program, e.g. fn softmax_f32(x: f32[n]) -> f32[n] = softmax(x);")
    with pytest.raises(cuk.LogicError, match=r"e\.g\. fn scaled_f32\(x: f32\[r, c\], k: f32\) -> f32\[r, c\] = "
                                             r"scaled\(x, k\);"):
        m._program.function("scaled")


def test_user_function_shadows_stdlib_and_names_do_not_collide():
    src = ("fn softmax(x: T[n]) -> T[n] = x * T(3);\n"
           "fn __cuk_softmax_f32(x: f32[n]) -> f32[n] = x;\n")
    m = cuk.compile(src, device="cpu")
    np.testing.assert_array_equal(m.softmax(np.ones(2, np.float32)), [3, 3])
    np.testing.assert_array_equal(m.__cuk_softmax_f32(np.ones(2, np.float32)), [1, 1])


def test_path_options_and_bundle(tmp_path):
    p = tmp_path / "prog.cuk"
    p.write_text(SRC)
    m = cuk.compile(str(p), device="cpu")
    np.testing.assert_array_equal(m.g(np.arange(3.0)), [0, 2, 4])
    with pytest.raises(cuk.CompileError) as e:
        m.g(np.array([True]))
    assert e.value.file == str(p)  # the wrapper compiled under the program's path
    cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
    b = tmp_path / "prog.cukb"
    r = subprocess.run([cukc, "build", str(p), "-o", str(b)], capture_output=True, text=True,
                       env=dict(os.environ, CUK_CACHE_DIR=str(tmp_path / "cache")))
    if r.returncode != 0:
        pytest.skip("cukc build needs NVRTC: " + r.stderr[-200:])
    mb = cuk.load(str(b), device="cpu")
    with pytest.raises(cuk.LogicError, match=r"is a bundle, which has none; .* e\.g\. fn g_f64\(x: f64\[n\]\) -> "
                                             r"f64\[n\] = g\(x\);"):
        mb.g(np.arange(3.0))


def test_device_arrays_on_the_fake_driver(tmp_path):
    # the GPU path (bench/fake_libcuda.c: copies are real, kernels do not run): T binds
    # from a DeviceArray's dtype and the result is a DeviceArray
    _, fake = cukpath.build_fake_driver(str(tmp_path))
    code = ("import numpy as np, cukpath, cuk\n"
            "m = cuk.compile('fn g(x: T[n]) -> T[n] = x + x;\\n', device='gpu')\n"
            "d = cuk.to_device(np.arange(4, dtype=np.float64))\n"
            "r = m.g(d)\n"
            "s = m.softmax(cuk.to_device(np.ones(3, np.float32)))\n"
            "print(m.backend, type(r).__name__, r.dtype, r.shape, s.dtype, sorted(m._bound))\n")
    env = cukpath.python_child_env(CUK_LIBCUDA=fake, CUK_CACHE_DIR=str(tmp_path / "cache"),
                                   PYTHONPATH=os.pathsep.join([os.path.dirname(__file__)] + sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == ("gpu DeviceArray float64 (4,) float32 [('g', ('f64',), (0,)), "
                                "('softmax', ('f32',), (0,))]")


SCALAR = """fn f(x: f32, k: i32) -> f32 = x * f32(k) + 1.0;
fn h(x: f64) -> f64 {
    if x > 1.0 { return x; }
    return 0.0 - x;
}
fn total(x: f32[n]) -> f32 = sum(x);
fn pair(x: f32) -> (f32, f32) = (x, x);
"""


def test_scalar_function_applies_elementwise():
    # a function of scalars called on arrays applies to each element, as in cuk code
    m = cuk.compile(SCALAR, device="cpu")
    assert isinstance(m.f, cuk.ScalarFunction) and repr(m.f) == "<cuk function f>"
    assert m.f.params == [("x", "float32", ()), ("k", "int32", ())] and m.f.results == [("float32", 0)]
    assert m.f(np.float32(2), 3) == 7.0 and m.f(2.0, 3) == 7.0  # scalars: the function itself
    assert not m._bound
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    got = m.f(x, 3)
    assert got.dtype == np.float32 and got.shape == (7,)
    np.testing.assert_array_equal(got, x * np.float32(3) + np.float32(1))
    x2 = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(m.f(x2, np.int32(2)), x2 * 2 + 1)
    np.testing.assert_array_equal(m.f(np.float32(1), np.arange(4, dtype=np.int32)), np.arange(4) + 1.0)
    v = np.array([0.5, 2.0, -3.0])
    np.testing.assert_array_equal(m.h(v), np.where(v > 1, v, -v))  # control flow, per element
    assert sorted(m._bound) == [("f", (), (0, 1)), ("f", (), (1, 0)), ("f", (), (2, 0)), ("h", (), (1,))]
    with pytest.raises(cuk.ArgumentError, match=r"^f\(\): parameter 'x' is an array of float32, but the argument "
                                                r"has dtype float64"):
        m.f(np.arange(3.0), 3)
    # not wrapped: array parameters, several results
    assert not isinstance(m.total, cuk.ScalarFunction) and not isinstance(m.pair, cuk.ScalarFunction)
    with pytest.raises(cuk.ArgumentError, match="is a float32 scalar, but the argument is a 1-D array"):
        m.pair(np.ones(2, np.float32))
