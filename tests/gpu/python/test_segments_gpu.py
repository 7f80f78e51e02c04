"""Segmented reductions on the GPU (emit_segred: prepass, tiles of 8192 or 4096, fix-up) against
NumPy and the CPU backend, over offsets that stress the tile logic: segments that start
or end exactly at a tile's edge, segments spanning many tiles, runs of empty segments
(inside a tile and at its edges), one element per segment, one segment over everything,
n not a multiple of the tile, a misaligned (sliced) input, and each accumulator kind
(4- and 8-byte sums, min, max, argmin/argmax, any, a lambda, two fused reductions).
Integer data, and floats holding small integers, must match exactly; bad offsets give
the CPU backend's message. Run on a GPU machine:
PYTHONPATH=build/python:python python3 -m pytest tests/gpu/python/test_segments_gpu.py"""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("CUK_BUILD_DIR") or os.path.join(ROOT, "build")
sys.path[:0] = [os.path.join(BUILD, "python"), os.path.join(ROOT, "python")]

import cuk  # noqa: E402

if not cuk.gpu_available():
    pytest.skip("needs a GPU", allow_module_level=True)

TILE = 4096  # the tile of 8-byte and fused reductions; one 4-byte reduction's is 2 * TILE
SRC = """
fn s32(x: f32[n], o: i64[k]) -> f32[?] = sum(x, segments=o);
fn s64(x: f64[n], o: i64[k]) -> f64[?] = sum(x, segments=o);
fn si(x: i64[n], o: i64[k]) -> i64[?] = sum(x, segments=o);
fn mx(x: i32[n], o: i64[k]) -> i32[?] = max(x, segments=o);
fn mn(x: f32[n], o: i64[k]) -> f32[?] = min(x, segments=o);
fn am(x: f64[n], o: i64[k]) -> i64[?] = argmin(x, segments=o);
fn ax(x: i32[n], o: i64[k]) -> i64[?] = argmax(x, segments=o);
fn an(x: i32[n], o: i64[k]) -> bool[?] = any(x > 5, segments=o);
fn last(x: i64[n], o: i64[k]) -> i64[?] = reduce(|a, b| where(b != 0, b, a), -7, x, segments=o);
fn two(x: f32[n], y: f32[n], o: i64[k]) -> f32[?] = max(x * y, segments=o) - min(x * y, segments=o);
fn sliced(x: f32[n], o: i64[k]) -> f32[?] = sum(x[1:], segments=o);
fn rnd(x: f32[n], o: i64[k]) -> f32[?] = sum(x, segments=o);
"""


@pytest.fixture(scope="module")
def mods():
    return cuk.compile(SRC, device="gpu", name="segs.cuk"), cuk.compile(SRC, device="cpu", name="segs.cuk")


def offsets_from(lens):
    return np.concatenate([[0], np.cumsum(np.asarray(lens, dtype=np.int64))]).astype(np.int64)


def shapes():
    rng = np.random.default_rng(7)
    yield "tile-aligned", offsets_from([TILE] * 5 + [2 * TILE, 3 * TILE, 1, TILE - 1, TILE])
    yield "ends-at-edges", offsets_from([TILE - 1, 1, TILE + 1, TILE - 1, 0, 0, 2 * TILE, 5])
    yield "wide-tile-edges", offsets_from([2 * TILE] * 3 + [2 * TILE - 1, 1, 0, 2 * TILE + 1, 4 * TILE - 1, 0, 7])
    yield "empties-at-edges", offsets_from([TILE, 0, 0, 0, TILE, 0, 3, 0, 0, TILE - 3, 0])
    yield "one-each", offsets_from([1] * 9000)
    yield "one-segment", offsets_from([5 * TILE + 77])
    yield "leading-trailing-empty", offsets_from([0, 0, 100, 0, 20000, 0, 0])
    yield "long-span", offsets_from([17, 40 * TILE + 3, 1000, 0, 9 * TILE])
    for mean in (3, 50, 1000, 20000):
        lens = np.floor(rng.exponential(mean, size=max(4, 300000 // mean))).astype(np.int64)
        yield "exp%d" % mean, offsets_from(lens)
    lens = rng.integers(0, 3, 50000)  # a third empty, short segments
    yield "short-mixed", offsets_from(lens)


SHAPES = list(shapes())


def ref(fn, x, o):
    return np.array([fn(x[o[s]:o[s + 1]]) for s in range(len(o) - 1)])


@pytest.mark.parametrize("name,o", SHAPES, ids=[s[0] for s in SHAPES])
def test_segments_match(mods, name, o):
    g, c = mods
    n = int(o[-1])
    rng = np.random.default_rng(n)
    xi = rng.integers(-3, 9, n).astype(np.int64)
    x32 = xi.astype(np.float32)
    x64 = xi.astype(np.float64)
    i32 = xi.astype(np.int32)
    csum = np.concatenate([[0], np.cumsum(xi)])
    np.testing.assert_array_equal(g.s32(x32, o), (csum[o[1:]] - csum[o[:-1]]).astype(np.float32))
    np.testing.assert_array_equal(g.s64(x64, o), c.s64(x64, o))
    np.testing.assert_array_equal(g.si(xi, o), c.si(xi, o))
    np.testing.assert_array_equal(g.mx(i32, o), c.mx(i32, o))
    np.testing.assert_array_equal(g.mn(x32, o), c.mn(x32, o))
    np.testing.assert_array_equal(g.am(x64, o), c.am(x64, o))
    np.testing.assert_array_equal(g.ax(i32, o), c.ax(i32, o))
    np.testing.assert_array_equal(g.an(i32, o), c.an(i32, o))
    np.testing.assert_array_equal(g.last(xi * (np.arange(n) % 3 == 0), o), c.last(xi * (np.arange(n) % 3 == 0), o))
    y = (np.arange(n) % 5).astype(np.float32)
    np.testing.assert_array_equal(g.two(x32, y, o), c.two(x32, y, o))
    x1 = np.concatenate([[1.0], x32]).astype(np.float32)
    np.testing.assert_array_equal(g.sliced(x1, o), c.sliced(x1, o))
    xr = rng.random(n, dtype=np.float32)
    want = np.array([xr[o[s]:o[s + 1]].sum(dtype=np.float64) for s in range(len(o) - 1)]) if n < 400000 else None
    got = g.rnd(xr, o)
    if want is not None:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)
    # the same bits on every run (no atomics on values)
    np.testing.assert_array_equal(got, g.rnd(xr, o))


def test_segments_empty_and_sizes(mods):
    g, c = mods
    for n in (0, 1, 33, 1025, 4095, 4096, 4097, (1 << 20) + 7):
        for o in (np.array([0, n], np.int64), np.linspace(0, n, 7).astype(np.int64),
                  np.array([0] * 3 + [n] * 3, np.int64)):
            x = (np.arange(n) % 7).astype(np.float32)
            np.testing.assert_array_equal(g.s32(x, o), c.s32(x, o))
            np.testing.assert_array_equal(g.am(x.astype(np.float64), o), c.am(x.astype(np.float64), o))


@pytest.mark.parametrize("o,msg", [
    ([1, 3, 6], "offs[0] is 1, but the first segment of a reduction must start at 0"),
    ([0, 4, 2, 6], "offsets must be non-decreasing, but offs[2] = 2 is less than offs[1] = 4"),
    ([0, 2, 5], "the last offset, offs[2] = 5, must be the length of the array (6)"),
    ([3, 2, 9], "offs[0] is 3, but the first segment of a reduction must start at 0"),
    ([0, 7, 6, 5, 6], "offs[2] = 6 is less than offs[1] = 7"),
    ([0], "the last offset, offs[0] = 0, must be the length of the array (6)"),
])
def test_bad_offsets(mods, o, msg):
    g, c = mods
    x = np.arange(6, dtype=np.float32)
    for m in (g, c):
        with pytest.raises(cuk.RunError) as e:
            m.s32(x, np.array(o, np.int64))
        assert msg in str(e.value), str(e.value)
    # the session still works afterwards
    np.testing.assert_array_equal(g.s32(x, np.array([0, 2, 6], np.int64)), [1, 14])
