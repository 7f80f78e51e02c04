"""Index chains that branch (concat, pad) in the map kernel's vector path, on the GPU
against the CPU backend: shapes put the chains' borders inside 4-element vectors, at
their edges and nowhere (rows and columns of 1, 4, 33, 1028 and 4099, last axes that are
and are not multiples of the vector width, 1-D lengths around it), and the same values
4 bytes past a 16-byte boundary take the element-by-element path. Values are exact:
every job only moves, adds and scales values that are exact in f32. (Written for a
whole-vector form of these chains, measured slower and not kept, 2026-12-07; the
checks hold for any form.)

Run on a GPU machine: PYTHONPATH=build/python:python python3 -m pytest tests/gpu/python."""
import os
import sys
import zlib

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("CUK_BUILD_DIR") or os.path.join(ROOT, "build")
sys.path[:0] = [os.path.join(BUILD, "python"), os.path.join(ROOT, "python")]

import cuk  # noqa: E402

if not cuk.gpu_available():
    pytest.skip("needs a GPU", allow_module_level=True)

SRC = """
fn jacobi(u: f32[n, m]) -> f32[n, m] {
    let inner = 0.25 * (u[0:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, 0:-2] + u[1:-1, 2:]);
    let mid = concat(u[1:-1, 0:1], inner, u[1:-1, -1:], axis=1);
    return concat(u[0:1, :], mid, u[-1:, :], axis=0);
}
fn stencil(x: f32[n, m]) -> f32[n, m] {
    let p = pad(x, 1, value=2.0);
    return p[0:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, 0:-2] + p[1:-1, 2:] - 4.0 * x;
}
fn rot(x: f32[n]) -> f32[n] = concat(x[3:], x[:3]) * 2.0 + x;
fn cat3(a: f32[n], b: f32[k], c: f32[j]) -> f32[n + k + j] = concat(a, b * 0.5, c);
fn padded(x: f32[n, m]) -> f32[n + 4, m + 4] = pad(x * 2.0 - 1.0, 2, value=-3.0);
fn flipcat(x: f32[n, m]) -> f32[n, m + m] = concat(reverse(x), transpose(transpose(x)) + 1.0, axis=1);
fn nested(x: f32[n, m]) -> f32[n + 2, m + 2] = pad(concat(x[:, 1:], x[:, :1], axis=1), 1) + 1.0;
"""

SHAPES = [(1, 4), (4, 1), (1, 1), (3, 8), (33, 4), (33, 36), (5, 1028), (1028, 5), (4099, 12), (7, 4099),
          (130, 260)]


@pytest.fixture(scope="module")
def mods():
    return cuk.compile(SRC, device="gpu"), cuk.compile(SRC, device="cpu")


def grid(shape, seed):
    """Integers / 4 in [-256, 256): sums of four and their quarters are exact."""
    return (np.random.default_rng(seed).integers(-1024, 1024, size=shape) / 4).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fn", ["jacobi", "stencil", "padded", "flipcat", "nested"])
def test_2d_chains_match_the_cpu_backend(mods, fn, shape):
    gpu, cpu = mods
    if fn == "jacobi" and min(shape) < 2:
        pytest.skip("a Jacobi step needs two rows and two columns")
    x = grid(shape, zlib.crc32(repr((fn, shape)).encode()))
    want = getattr(cpu, fn)(x)
    np.testing.assert_array_equal(getattr(gpu, fn)(x), want)
    np.testing.assert_array_equal(getattr(gpu, fn)(cuk.to_device(x)).get(), want)
    # the same values 4 bytes past a 16-byte boundary: the element-by-element path
    torch = pytest.importorskip("torch")
    flat = torch.zeros(x.size + 1, device="cuda")
    t = flat[1:].view(*shape)
    t.copy_(torch.from_numpy(x))
    np.testing.assert_array_equal(getattr(gpu, fn)(t).cpu().numpy(), want)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 8, 33, 1025, 4096, (1 << 20) + 7])
def test_1d_concats_match_the_cpu_backend(mods, n):
    gpu, cpu = mods
    x = grid((n,), n)
    if n >= 3:
        np.testing.assert_array_equal(gpu.rot(x), cpu.rot(x))
    a, b, c = grid((n,), 1), grid((n + 3,), 2), grid((2 * n + 1,), 3)
    np.testing.assert_array_equal(gpu.cat3(a, b, c), cpu.cat3(a, b, c))
    np.testing.assert_array_equal(gpu.cat3(a, b[:0], c[:4]), cpu.cat3(a, b[:0], c[:4]))


def test_large_stencil_matches_numpy(mods):
    gpu, _ = mods
    x = grid((2048, 4100), 11)
    p = np.pad(x, 1, constant_values=2.0)
    want = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * x
    np.testing.assert_array_equal(gpu.stencil(x), want)
    u = gpu.jacobi(x)
    np.testing.assert_array_equal(u[1:-1, 1:-1], 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]))
    np.testing.assert_array_equal(u[0], x[0])
    np.testing.assert_array_equal(u[:, -1], x[:, -1])
