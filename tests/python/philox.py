"""NumPy Philox4x32-10, bit-for-bit as kernels/philox.h, to check cuk's rand/randn.

With key (lo(s), hi(s)), the call on counter c = (lo(c), hi(c), 0, 0) gives f32 uniforms
4c .. 4c + 3 (word i % 4 each), f64 uniforms 2c, 2c + 1 (words 2j, 2j + 1 for j = i % 2)
and normals 4c .. 4c + 3 (Box-Muller on the pairs (x0, x1), (x2, x3): cosine for even
i, sine for odd); the ten rounds and the float conversions match the C header."""
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


def _words(n, seed, per):
    """For elements 0..n-1, the words of the call on counter i // per: an (n, 4) array."""
    i = np.arange(n, dtype=np.uint64)
    return np.stack(philox4x32(i // np.uint64(per), seed), axis=1), i


def rand(n, seed, dtype=np.float32):
    """cuk's rand(n, seed=seed): uniform [0, 1)."""
    total = int(np.prod(n))
    if np.dtype(dtype) == np.float32:
        w, i = _words(total, seed, 4)
        x = w[np.arange(total), (i % np.uint64(4)).astype(np.int64)]
        r = (x >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    else:
        w, i = _words(total, seed, 2)
        j = (i % np.uint64(2)).astype(np.int64) * 2
        a, b = w[np.arange(total), j], w[np.arange(total), j + 1]
        m = (a.astype(np.uint64) << np.uint64(21)) ^ (b >> np.uint32(11)).astype(np.uint64)
        r = m.astype(np.float64) * (1.0 / 9007199254740992.0)
    return r.reshape(n)


LOG_C = [0.08, 0.08695652173913043, 0.09523809523809523, 0.10526315789473684, 0.11764705882352941,
         0.13333333333333333, 0.15384615384615385, 0.18181818181818182, 0.2222222222222222,
         0.2857142857142857, 0.4, 0.6666666666666666]
SIN_C = [-8.22063524662433e-18, 2.8114572543455206e-15, -7.647163731819816e-13, 1.6059043836821613e-10,
         -2.505210838544172e-08, 2.7557319223985893e-06, -0.0001984126984126984, 0.008333333333333333,
         -0.16666666666666666]
COS_C = [4.110317623312165e-19, -1.5619206968586225e-16, 4.779477332387385e-14, -1.1470745597729725e-11,
         2.08767569878681e-09, -2.755731922398589e-07, 2.48015873015873e-05, -0.001388888888888889,
         0.041666666666666664, -0.5]


def _horner(c, z):
    p = np.full_like(z, c[0])
    for x in c[1:]:
        p = p * z + x
    return p


def m2log_u32(k):
    """-2 log(k / 2^32) for uint64 k in [1, 2^32], as cuk_m2log_u32 (same operations)."""
    kf = k.astype(np.float64)
    e = np.frexp(kf)[1].astype(np.int64) - 1  # floor(log2 k)
    m = kf / np.ldexp(1.0, e)
    big = m > 1.4142135623730951
    m = np.where(big, m * 0.5, m)
    e = e + big
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    lm = 2.0 * s + (s * z) * _horner(LOG_C, z)
    ef = (e - 32).astype(np.float64)
    l = ef * 6.93147180369123816490e-01 + (ef * 1.90821492927058770002e-10 + lm)
    return l * -2.0


def _fold(w, at):
    """The quadrant q of 2 pi w / 2^32, whether the angle in it is past `at` (of 2^30),
    and the angle folded back there (h = 2^30 - f past it), as integers."""
    w = w.astype(np.uint64)
    q = w >> np.uint64(30)
    f = w & np.uint64(0x3FFFFFFF)
    hi = f > np.uint64(at)
    return q, hi, np.where(hi, np.uint64(1 << 30) - f, f)


def cos2pi_u32(w):
    """cos(2 pi w / 2^32) for uint32 w, as cuk_cos2pi_u32 (folded past 2^27)."""
    q, hi, h = _fold(w, 1 << 27)
    x = h.astype(np.float64) * 1.4629180792671596e-09
    z = x * x
    sn = x + (x * z) * _horner(SIN_C, z)
    cs = 1.0 + z * _horner(COS_C, z)
    r = np.where(((q & np.uint64(1)) == 0) != hi, cs, sn)
    return np.where((q == 1) | (q == 2), -r, r)


F32 = np.float32
LOG_F = [F32(0.222222224), F32(0.285714298), F32(0.400000006), F32(0.666666687)]
SIN_F = [F32(-2.50521079e-08), F32(2.75573188e-06), F32(-1.98412701e-04), F32(8.33333377e-03), F32(-0.166666672)]
COS_F = [F32(-2.75573200e-07), F32(2.48015876e-05), F32(-1.38888892e-03), F32(4.16666679e-02), F32(-0.5)]


def _horner_sel(c1, c0, sel, z):
    """Horner's rule with coefficient j taken from c1 where sel, else from c0."""
    p = np.where(sel, c1[0], c0[0]).astype(np.float32)
    for x1, x0 in zip(c1[1:], c0[1:]):
        p = p * z + np.where(sel, x1, x0).astype(np.float32)
    return p


def m2log_u32_f(k):
    """-2 log(k / 2^32) in float32 for uint64 k in [1, 2^32], the value whose square root cuk_rad_u32_f(k - 1) returns."""
    e = np.frexp(k.astype(np.float64))[1].astype(np.int64) - 1  # exact: k < 2^53
    sh = e - 23
    top = np.where(sh >= 0, k >> np.maximum(sh, 0).astype(np.uint64), k << np.maximum(-sh, 0).astype(np.uint64))
    e = e + (top > np.uint64(11863283))
    p2 = np.left_shift(np.int64(1), e)
    ki = k.astype(np.int64)
    s = (ki - p2).astype(np.float32) / (ki + p2).astype(np.float32)
    z = s * s
    lm = F32(2) * s + (s * z) * _horner(LOG_F, z)
    ef = (e - 32).astype(np.float32)
    l = ef * F32(0.693145752) + (ef * F32(1.42860677e-06) + lm)
    return l * F32(-2)


def cos2pi_u32_f(w):
    """cos(2 pi w / 2^32) in float32 for uint32 w, as cuk_cos2pi_u32_f (folded past pi/4)."""
    q, hi, h = _fold(w, 1 << 29)
    x = h.astype(np.float32) * F32(1.46291812e-09)
    z = x * x
    c = ((q & np.uint64(1)) == 0) != hi
    a = np.where(c, F32(1), x)
    p = _horner_sel(COS_F, SIN_F, c, z)
    r = a + (a * z) * p
    return np.where((q == 1) | (q == 2), -r, r)


def randn(n, seed, dtype=np.float32):
    """cuk's randn(n, seed=seed): Box-Muller with kernels/philox.h's own log and cos
    (bit for bit), in float32 for f32 and in double for f64."""
    total = int(np.prod(n))
    w, i = _words(total, seed, 4)
    j = (i & np.uint64(2)).astype(np.int64)
    a, b = w[np.arange(total), j], w[np.arange(total), j + 1]
    with np.errstate(over="ignore"):
        b = (b - np.where(i & np.uint64(1), np.uint32(1 << 30), np.uint32(0))).astype(np.uint32)
    if np.dtype(dtype) == np.float32:
        return (np.sqrt(m2log_u32_f(a.astype(np.uint64) + np.uint64(1))) * cos2pi_u32_f(b)).reshape(n)
    rad = np.sqrt(m2log_u32(a.astype(np.uint64) + np.uint64(1)))
    r = rad * cos2pi_u32(b)
    return r.astype(dtype).reshape(n)


if __name__ == "__main__":
    # Known-answer test from the Random123 distribution (kat_vectors, philox4x32_10):
    # counter 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
    x = philox4x32(np.array([0], dtype=np.uint64), 0)
    print(" ".join("%08x" % int(v[0]) for v in x))
    print(rand(4, 7))
    print(randn(4, 7))
