"""cuk.compile on the CPU backend: calls with NumPy arrays and scalars, dtypes, results,
errors (CompileError, ValueError naming the parameter, RunError), device selection."""
import os
import threading

import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SAXPY = """
fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] {
    return a * x + y;
}
fn total(x: f32[n]) -> f32 = sum(x);
fn rowsum(m: f64[r, c]) -> f64[r] = sum(m, axis=1);
fn ident(x: i64[n]) -> i64[n] = x;
fn fixed(x: f32[3]) -> f32 = max(x);
fn hello(k: i64) { print(k * 2); }
fn at(x: f32[n], i: i64) -> f32 = x[i];
"""


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SAXPY, device="cpu")


def test_saxpy_numpy_round_trip(m):
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    y = np.full(1000, 0.5, np.float32)
    z = m.saxpy(2.0, x, y)
    assert isinstance(z, np.ndarray) and z.dtype == np.float32 and z.shape == (1000,)
    np.testing.assert_allclose(z, 2 * x + y, rtol=1e-6)
    assert m.backend == "cpu"
    assert m.functions == ["saxpy", "total", "rowsum", "ident", "fixed", "hello", "at"]


def test_scalar_result_is_numpy_scalar(m):
    r = m.total(np.ones(10, np.float32))
    assert isinstance(r, np.float32) and r == 10


def test_2d_and_f64(m):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    r = m.rowsum(a)
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r, a.sum(axis=1))


def test_literal_size(m):
    assert m.fixed(np.array([1, 5, 2], np.float32)) == 5
    with pytest.raises(ValueError, match="parameter 'x' needs size 3"):
        m.fixed(np.zeros(4, np.float32))


def test_result_does_not_alias_input(m):
    x = np.arange(5, dtype=np.int64)
    y = m.ident(x)
    y[0] = 100
    assert x[0] == 0


def test_inputs_unchanged_and_noncontiguous(m):
    big = np.arange(20, dtype=np.float32)
    x = big[::2]  # strided: copied to a contiguous temporary
    y = np.ones(10, np.float32)
    before = big.copy()
    np.testing.assert_array_equal(m.saxpy(1.0, x, y), x + 1)
    np.testing.assert_array_equal(big, before)


def test_lists_and_numpy_scalars(m):
    np.testing.assert_array_equal(m.saxpy(np.float32(3), [1, 2], [0, 0]), [3, 6])
    np.testing.assert_array_equal(m.saxpy(2, np.ones(2, np.float32), np.zeros(2, np.float32)), [2, 2])


def test_print_goes_to_stdout(m, capfd):
    assert m.hello(21) is None
    assert capfd.readouterr().out == "42\n"


@pytest.mark.parametrize(
    "dt,ty",
    [("bool", "bool"), ("int32", "i32"), ("int64", "i64"), ("uint32", "u32"), ("uint64", "u64"),
     ("float32", "f32"), ("float64", "f64")],
)
def test_every_dtype(dt, ty):
    m = cuk.compile(f"fn f(x: {ty}[n], y: {ty}[n]) -> {ty}[n] = where(x == y, x, y);\n"
                    f"fn first(x: {ty}[n]) -> {ty} = x[0];\n", device="cpu")
    x = (np.arange(7) % 2).astype(dt)
    y = np.ones(7, dt)
    r = m.f(x, y)
    assert r.dtype == np.dtype(dt)
    np.testing.assert_array_equal(r, np.where(x == y, x, y))
    v = m.first(x)
    assert v.dtype == np.dtype(dt) and v == x[0]


def test_integer_wraparound_matches_numpy():
    m = cuk.compile("fn f(x: i32[n]) -> i32[n] = x * 65536;", device="cpu")
    x = np.array([1, 40000, -40000], np.int32)
    np.testing.assert_array_equal(m.f(x), x * np.int32(65536))


def test_scalar_conversions():
    m = cuk.compile("fn f(a: i32, b: u64, c: bool, d: f64) -> f64 = f64(a) + f64(b) + (c ? 1.0 : 0.0) + d;",
                    device="cpu")
    assert m.f(1, 2, True, 0.5) == 4.5
    assert m.f(np.int32(1), np.uint64(2), np.bool_(False), np.float32(0.5)) == 3.5
    with pytest.raises(ValueError, match="parameter 'a' is int32"):
        m.f(2**40, 0, True, 0.0)
    with pytest.raises(ValueError, match="parameter 'b'"):
        m.f(1, -1, True, 0.0)
    with pytest.raises(ValueError, match="parameter 'a'"):
        m.f(1.5, 0, True, 0.0)


def test_shape_mismatch_names_parameter(m):
    x = np.ones(5, np.float32)
    with pytest.raises(ValueError) as e:
        m.saxpy(2.0, x, np.ones(4, np.float32))
    msg = str(e.value)
    assert "parameter 'y'" in msg and "'n'" in msg and "parameter 'x'" in msg
    assert isinstance(e.value, cuk.Error)


def test_dtype_mismatch_names_parameter(m):
    with pytest.raises(ValueError, match=r"parameter 'y' is an array of float32, but the argument has dtype float64"):
        m.saxpy(2.0, np.ones(3, np.float32), np.ones(3))


def test_rank_mismatch(m):
    with pytest.raises(ValueError, match="parameter 'x'"):
        m.saxpy(2.0, np.ones((2, 2), np.float32), np.ones(2, np.float32))


def test_unsupported_dtype(m):
    with pytest.raises(ValueError, match="not supported"):
        m.total(np.ones(3, np.longdouble))
    # complex64 is one of cuk's dtypes (c64), just not this parameter's
    with pytest.raises(ValueError, match="is an array of float32, but the argument has dtype complex64"):
        m.total(np.ones(3, np.complex64))
    # float16 is one of cuk's dtypes (f16), just not this parameter's
    with pytest.raises(ValueError, match="is an array of float32, but the argument has dtype float16"):
        m.total(np.ones(3, np.float16))


def test_argument_count(m):
    with pytest.raises(TypeError, match="takes 3 arguments"):
        m.saxpy(1.0, np.ones(2, np.float32))
    with pytest.raises(TypeError):
        m.saxpy(1.0, x=1, y=2)


def test_compile_error_attributes():
    with pytest.raises(cuk.CompileError) as e:
        cuk.compile("fn f(x: f32) -> f32 {\n    return x + y;\n}\n", name="bad.cuk")
    err = e.value
    assert (err.file, err.line, err.column) == ("bad.cuk", 2, 16)
    assert "unknown name 'y'" in err.message
    s = str(err)
    assert s.startswith("bad.cuk:2:16: error: unknown name 'y'")
    assert "    return x + y;" in s and s.rstrip().endswith("^")
    assert isinstance(err, cuk.Error)


def test_compile_error_type_mismatch_several():
    with pytest.raises(cuk.CompileError) as e:
        cuk.compile("fn f(i: i32, x: f32) -> f32 = x + i;\n", device="cpu")
    assert "f32(" in str(e.value)


def test_compile_from_path(tmp_path):
    p = tmp_path / "prog.cuk"
    p.write_text("fn twice(x: f64[n]) -> f64[n] = 2.0 * x;\n")
    for arg in (str(p), p):
        m = cuk.compile(arg, device="cpu")
        np.testing.assert_array_equal(m.twice(np.arange(3.0)), [0, 2, 4])
    bad = tmp_path / "bad.cuk"
    bad.write_text("fn f( -> f32 = 1.0;\n")
    with pytest.raises(cuk.CompileError) as e:
        cuk.compile(str(bad))
    assert e.value.file == str(bad) and e.value.line == 1


def test_missing_file():
    with pytest.raises(cuk.CompileError, match="nope.cuk"):
        cuk.compile("/nonexistent/nope.cuk")


def test_run_error_has_location(m):
    with pytest.raises(cuk.RunError) as e:
        m.at(np.ones(3, np.float32), 7)
    assert e.value.line == 10 and e.value.file == "<string>"
    assert "7" in e.value.message


def test_device_selection(monkeypatch):
    with pytest.raises(ValueError, match="auto"):
        cuk.compile("fn f() {}", device="tpu")
    m = cuk.compile("fn f(x: f32) -> f32 = x;", device="auto")
    assert m.backend in ("cpu", "gpu")
    monkeypatch.setenv("CUK_BACKEND", "cpu")
    assert cuk.compile("fn f(x: f32) -> f32 = x;").backend == "cpu"
    monkeypatch.setenv("CUK_BACKEND", "bogus")
    with pytest.raises(ValueError, match="CUK_BACKEND"):
        cuk.compile("fn f(x: f32) -> f32 = x;")


@pytest.mark.skipif(cuk.gpu_available(), reason="needs a machine without a GPU")
def test_gpu_requested_without_gpu():
    with pytest.raises(cuk.Error, match="GPU"):
        cuk.compile("fn f(x: f32) -> f32 = x;", device="gpu")


def test_params_and_repr(m):
    assert m.saxpy.params == [("a", "float32", ()), ("x", "float32", ("n",)), ("y", "float32", ("n",))]
    assert m.fixed.params == [("x", "float32", (3,))]
    assert "saxpy" in repr(m) and m["total"] is m.total
    with pytest.raises(AttributeError):
        m.nothere
    with pytest.raises(KeyError):
        m["nothere"]


def test_stdlib_function(m):
    # non-generic stdlib functions are reachable by name too; generic ones are inlined only
    assert not hasattr(m, "nothere")


def test_threads(m):
    x = np.arange(10000, dtype=np.float32)
    y = np.ones(10000, np.float32)
    want = 3 * x + y
    errors = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_array_equal(m.saxpy(3.0, x, y), want)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_empty_arrays(m):
    z = m.saxpy(1.0, np.zeros(0, np.float32), np.zeros(0, np.float32))
    assert z.shape == (0,)
    assert m.total(np.zeros(0, np.float32)) == 0


def test_large_call_releases_memory(m):
    x = np.ones(1 << 20, np.float32)
    for _ in range(5):
        assert m.total(x) == 1 << 20


def test_examples_dir_programs():
    root = cukpath.ROOT
    m = cuk.compile(os.path.join(root, "examples", "saxpy.cuk"), device="cpu")
    z = m.saxpy(2.0, np.ones(4, np.float32), np.ones(4, np.float32))
    np.testing.assert_array_equal(z, [3, 3, 3, 3])


def test_internal_error_in_compile_is_compile_error(monkeypatch):
    # A broken invariant in a pass (CUK_DIE_AT injects one) is an exception, not an abort.
    # (fuse and emit run only for the GPU: tests/gpu/python and tests/lit cover them.)
    monkeypatch.setenv("CUK_DIE_AT", "sema")
    with pytest.raises(cuk.CompileError, match=r"internal error at compiler/pipeline.c:\d+: injected"):
        cuk.compile("fn f(x: f32[n]) -> f32[n] = x * 2.0;", device="cpu")


def test_internal_error_in_run_is_run_error(monkeypatch):
    m = cuk.compile("fn f(x: f32[n]) -> f32[n] = x * 2.0;", device="cpu")
    monkeypatch.setenv("CUK_DIE_AT", "cpu")
    with pytest.raises(cuk.RunError, match=r"internal error at exec/cpu/eval.c:\d+: injected"):
        m.f(np.ones(3, np.float32))
    monkeypatch.delenv("CUK_DIE_AT")
    assert m.f(np.ones(3, np.float32)).tolist() == [2.0, 2.0, 2.0]  # still usable


def test_calls_before_and_after_a_fork(m):
    """CPU calls run on kept runner threads; a forked child has none of its parent's and
    starts its own (a call there must not wait for a thread that is not in it)."""
    x = np.arange(1000, dtype=np.float32)
    assert m.total(x) == 499500.0
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        try:
            ok = m.total(x) == 499500.0 and list(m.saxpy(2.0, x[:3], x[:3])) == [0.0, 3.0, 6.0]
        except BaseException:
            ok = False
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"1"
    assert m.total(x) == 499500.0
