"""NumPy Philox4x32-10, bit-for-bit as kernels/philox.h, to check cuk's rand/randn.

Element i of a stream with seed s uses counter (lo(i), hi(i), 0, 0) and key
(lo(s), hi(s)); the ten rounds and the float conversions match the C header."""
import numpy as np

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint32(0x9E3779B9)
W1 = np.uint32(0xBB67AE85)
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32(counter, seed):
    """Returns four uint32 arrays (x0, x1, x2, x3) for the counters (an int array)."""
    ctr = np.asarray(counter, dtype=np.uint64)
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    c0 = (ctr & MASK32).astype(np.uint64)
    c1 = (ctr >> np.uint64(32)).astype(np.uint64)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0 = np.uint32(seed & 0xFFFFFFFF)
    k1 = np.uint32(seed >> 32)
    with np.errstate(over="ignore"):
        for _ in range(10):
            p0 = M0 * c0
            p1 = M1 * c2
            hi0, lo0 = p0 >> np.uint64(32), p0 & MASK32
            hi1, lo1 = p1 >> np.uint64(32), p1 & MASK32
            n0 = hi1 ^ c1 ^ np.uint64(k0)
            n1 = lo1
            n2 = hi0 ^ c3 ^ np.uint64(k1)
            n3 = lo0
            c0, c1, c2, c3 = n0, n1, n2, n3
            k0 = np.uint32(k0 + W0)
            k1 = np.uint32(k1 + W1)
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def rand(n, seed, dtype=np.float32):
    """cuk's rand(n, seed=seed): uniform [0, 1), element i from counter i."""
    x0, x1, _, _ = philox4x32(np.arange(int(np.prod(n)), dtype=np.uint64), seed)
    if np.dtype(dtype) == np.float32:
        r = (x0 >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    else:
        m = (x0.astype(np.uint64) << np.uint64(21)) ^ (x1 >> np.uint32(11)).astype(np.uint64)
        r = m.astype(np.float64) * (1.0 / 9007199254740992.0)
    return r.reshape(n)


def randn(n, seed, dtype=np.float32):
    """cuk's randn(n, seed=seed): Box-Muller in double, then rounded to dtype."""
    x0, x1, _, _ = philox4x32(np.arange(int(np.prod(n)), dtype=np.uint64), seed)
    u1 = (x0.astype(np.float64) + 1.0) * (1.0 / 4294967296.0)
    u2 = x1.astype(np.float64) * (1.0 / 4294967296.0)
    r = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    return r.astype(dtype).reshape(n)


if __name__ == "__main__":
    # Known-answer test from the Random123 distribution (kat_vectors, philox4x32_10):
    # counter 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
    x = philox4x32(np.array([0], dtype=np.uint64), 0)
    print(" ".join("%08x" % int(v[0]) for v in x))
    print(rand(4, 7))
    print(randn(4, 7))
