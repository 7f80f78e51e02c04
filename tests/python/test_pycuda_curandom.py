"""cuk.curandom's PyCUDA generator classes on whatever backend this machine has: the
pseudo-random ones are Philox streams with PyCUDA's seeding and layout, the Sobol ones
real Sobol sequences (known first points, stratification, low discrepancy)."""
import statistics

import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk.curandom as cr
import cuk.gpuarray as ga
from philox import philox4x32

PSEUDO = [cr.XORWOWRandomNumberGenerator, cr.MRG32k3aRandomNumberGenerator]
SOBOL = [cr.Sobol32RandomNumberGenerator, cr.ScrambledSobol32RandomNumberGenerator,
         cr.Sobol64RandomNumberGenerator, cr.ScrambledSobol64RandomNumberGenerator]


def seeds(*s):
    return lambda count: ga.to_gpu(np.array(s, np.int32))


def test_curand_version_is_a_tuple_or_none():
    v = cr.get_curand_version()
    assert v is None or (len(v) == 3 and v >= (3, 2, 0) and all(isinstance(x, int) for x in v))


def test_one_generator_is_the_language_stream():
    # generator 0 with seed s draws the words rand(seed=s) reads, and goes on where it stopped
    g = cr.XORWOWRandomNumberGenerator(seeds(7))
    a = g.gen_uniform(10, np.float32).get()
    b = g.gen_uniform(6, np.float32).get()
    np.testing.assert_array_equal(np.concatenate([a, b]), cr.rand(16, seed=7).get())
    d = cr.XORWOWRandomNumberGenerator(seeds(7), offset=16).gen_uniform(8, np.float64).get()
    x = philox4x32(np.arange(4, 8), 7)
    w = np.stack(x, axis=1).reshape(-1).astype(np.uint64)
    want = ((w[0::2] << np.uint64(21)) ^ (w[1::2] >> np.uint64(11))).astype(np.float64) * 2.0 ** -53
    np.testing.assert_array_equal(d, want)
    u = cr.XORWOWRandomNumberGenerator(seeds(7)).gen_uniform(16, np.uint32).get()
    np.testing.assert_array_equal(u, np.stack(philox4x32(np.arange(4), 7), axis=1).reshape(-1))
    np.testing.assert_array_equal(cr.rand(16, np.uint32, seed=7).get(), u)


def test_generators_interleave_and_skip():
    # element i is draw i // g of generator i % g; skip_ahead moves every generator
    g2 = cr.XORWOWRandomNumberGenerator(seeds(3, 3), offset=0)
    x = g2.gen_uniform(8, np.uint32).get()
    g2.call_skip_ahead(2)
    y = g2.gen_uniform(2, np.uint32).get()
    one = cr.XORWOWRandomNumberGenerator(seeds(3)).gen_uniform(7, np.uint32).get()
    np.testing.assert_array_equal(x[0::2], one[:4])
    np.testing.assert_array_equal(y[0], one[6])
    assert not np.array_equal(x[0::2], x[1::2])  # generator 1 is another sequence
    g2 = cr.XORWOWRandomNumberGenerator(seeds(3, 3))
    g2.call_skip_ahead_sequence(1)
    np.testing.assert_array_equal(g2.gen_uniform(8, np.uint32).get()[0::2], x[1::2])


@pytest.mark.parametrize("cls", PSEUDO + SOBOL)
def test_distributions(cls):
    np.random.seed(1)
    g = cls()
    n = 1 << 18  # 256 points of each of the 1024 dimensions for the Sobol ones
    for dt in (np.float32, np.float64):
        u = g.gen_uniform(n, dt)
        assert u.dtype == dt and u.shape == (n,)
        u = u.get()
        assert 0 <= u.min() and u.max() <= 1
        assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
        z = g.gen_normal((512, n // 512), dt)
        assert z.dtype == dt and z.shape == (512, n // 512)
        z = z.get()
        assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
        assert abs((np.abs(z) < 1).mean() - 0.682689) < 0.005
        ln = g.gen_log_normal(n + 1, dt, 1.0, 0.5).get()
        assert ln.min() > 0 and abs(np.log(ln).mean() - 1) < 0.01 and abs(np.log(ln).std() - 0.5) < 0.01
    bits = g.gen_uniform(n, np.uint32).get()
    assert bits.dtype == np.uint32 and abs(bits.mean() / 2.0 ** 32 - 0.5) < 0.005
    assert abs(np.mean(bits >> 31) - 0.5) < 0.005 and abs(np.mean(bits & 1) - 0.5) < 0.01 or "Sobol" in cls.__name__
    p = g.gen_poisson(n, np.uint32, 13.0).get()
    assert p.dtype == np.uint32 and abs(p.mean() - 13) < 0.05 and abs(p.var() - 13) < 0.3
    for dt in (np.float32, np.float64, np.uint32):
        a = ga.empty(100000, dt)
        a.fill(10)
        g.fill_poisson(a)
        a = a.get()
        assert a.dtype == dt and abs((a == 9).mean() - 0.12511) < 0.006 and abs(a.mean() - 10) < 0.05
    big = g.gen_poisson(4096, np.uint32, 2500.0).get()
    assert abs(big.mean() - 2500) < 3 and abs(big.std() - 50) < 3
    huge = g.gen_poisson(4096, np.uint32, 1e6).get()  # the normal approximation, as cuRAND's
    assert abs(huge.mean() - 1e6) < 60 and abs(huge.std() - 1000) < 60


@pytest.mark.parametrize("cls", PSEUDO)
def test_pseudo_seeding(cls):
    a = cls(seeds(*range(5))).gen_normal(1000, np.float64).get()
    b = cls(seeds(*range(5))).gen_normal(1000, np.float64).get()
    c = cls(seeds(*range(1, 6))).gen_normal(1000, np.float64).get()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.random.seed(5)
    d = cls().gen_uniform(100, np.float32).get()
    np.random.seed(5)
    np.testing.assert_array_equal(cls().gen_uniform(100, np.float32).get(), d)
    with pytest.raises(TypeError):
        cls(lambda count: ga.zeros(count, np.float32))
    with pytest.raises(NotImplementedError):
        cls().gen_uniform(10, np.int64)


# the first points of the 2-D Sobol sequence (Gray code order, as cuRAND's)
FIRST = [(0, 0), (.5, .5), (.75, .25), (.25, .75), (.375, .375), (.875, .875), (.625, .125), (.125, .625)]


@pytest.mark.parametrize("cls", [cr.Sobol32RandomNumberGenerator, cr.Sobol64RandomNumberGenerator])
def test_sobol_first_points(cls):
    bits = cls.generator_bits
    dset = cr.direction_vector_set.VECTOR_32 if bits == 32 else cr.direction_vector_set.VECTOR_64
    g = cls(dir_vector=cr.generate_direction_vectors(2, dset))
    x = g.gen_uniform(16, np.float64).get().reshape(8, 2)
    np.testing.assert_array_equal(x, np.array(FIRST) + 2.0 ** -(33 if bits == 32 else 54))
    ints = cls(dir_vector=cr.generate_direction_vectors(2, dset)).gen_uniform(16, np.uint32).get()
    np.testing.assert_array_equal(ints.reshape(8, 2), (np.array(FIRST) * 2 ** 32).astype(np.uint32))
    # the next call goes on from point 8; offset= starts there too
    y = g.gen_uniform(4, np.float64).get()
    z = cls(dir_vector=cr.generate_direction_vectors(2, dset), offset=8).gen_uniform(4, np.float64).get()
    np.testing.assert_array_equal(y, z)
    np.testing.assert_array_equal(y.reshape(2, 2), np.array([[.1875, .3125], [.6875, .8125]]) + 2.0 ** -(33 if bits == 32 else 54))
    g.call_skip_ahead(3)
    np.testing.assert_array_equal(g.gen_uniform(2, np.float64).get(),
                                  cls(dir_vector=cr.generate_direction_vectors(2, dset), offset=13).gen_uniform(2, np.float64).get())


def reference_sobol(v, count):
    """Points 0 .. count-1 of every dimension in NumPy, the direct Gray-code formula."""
    i = np.arange(count, dtype=np.uint64)
    gray = i ^ (i >> np.uint64(1))
    x = np.zeros((count, v.shape[0]), np.uint64)
    for b in range(v.shape[1]):
        on = ((gray >> np.uint64(b)) & np.uint64(1)).astype(bool)
        x[on] ^= v[:, b].astype(np.uint64)[None, :]
    return x


@pytest.mark.parametrize("cls", SOBOL)
def test_sobol_is_a_stratified_sequence(cls):
    g = cls()
    dims = g.block_count * g.generators_per_block
    m = 8
    x = g.gen_uniform(dims << m, np.uint32 if g.generator_bits == 32 else np.uint64).get().reshape(1 << m, dims)
    v = g._v.get()
    want = reference_sobol(v, 1 << m) ^ g._sc.get().astype(np.uint64)[None, :]
    np.testing.assert_array_equal(x.astype(np.uint64), want)
    # every one-dimensional projection of 2^m points has one point per interval of 2^-m
    top = (x >> (g.generator_bits - m)).astype(np.int64)
    assert all((np.sort(top[:, j]) == np.arange(1 << m)).all() for j in range(dims))
    # the first two dimensions form a (0, m, 2)-net: every 2^-a x 2^-(m-a) box holds one point
    if "Scrambled" not in cls.__name__:
        for a in range(m + 1):
            cell = (top[:, 0] >> (m - a)) * (1 << (m - a)) + (top[:, 1] >> a)
            assert len(np.unique(cell)) == 1 << m


def l2_star_discrepancy(p):
    """Warnock's formula."""
    n, d = p.shape
    t1 = (1 / 3) ** d
    t2 = np.prod((1 - p ** 2) / 2, axis=1).sum() * 2 / n
    t3 = np.prod(1 - np.maximum(p[:, None, :], p[None, :, :]), axis=2).sum() / n ** 2
    return np.sqrt(t1 - t2 + t3)


def test_sobol_has_low_discrepancy():
    d, n = 4, 1024
    s = cr.Sobol32RandomNumberGenerator(dir_vector=cr.generate_direction_vectors(d)).gen_uniform(n * d, np.float64)
    ss = cr.ScrambledSobol32RandomNumberGenerator(
        dir_vector=cr.generate_direction_vectors(d, cr.direction_vector_set.SCRAMBLED_VECTOR_32),
        scramble_vector=cr.generate_scramble_constants32(d)).gen_uniform(n * d, np.float64)
    r = cr.XORWOWRandomNumberGenerator(seeds(*range(d))).gen_uniform(n * d, np.float64)
    ds, dss, dr = (l2_star_discrepancy(a.get().reshape(n, d)) for a in (s, ss, r))
    mc = np.sqrt((2.0 ** -d - 3.0 ** -d) / n)  # the expected discrepancy of independent points
    assert ds < mc / 4 and dss < mc / 4 and mc / 2 < dr < 2 * mc, (ds, dss, dr, mc)


def test_sobol_normals_are_the_inverse_cdf():
    g = cr.Sobol64RandomNumberGenerator(dir_vector=cr.generate_direction_vectors(3, cr.direction_vector_set.VECTOR_64))
    u = g.gen_uniform(3000, np.float64).get()
    g = cr.Sobol64RandomNumberGenerator(dir_vector=cr.generate_direction_vectors(3, cr.direction_vector_set.VECTOR_64))
    z = g.gen_normal(3000, np.float64).get()
    inv = statistics.NormalDist().inv_cdf
    np.testing.assert_allclose(z, [inv(x) for x in u], rtol=1e-13, atol=1e-14)


def test_direction_vectors_and_constants():
    v32 = cr.generate_direction_vectors(1024)
    v64 = cr.generate_direction_vectors(1024, cr.direction_vector_set.VECTOR_64)
    assert v32.shape == (1024, 32) and v32.dtype == np.uint32 and v64.shape == (1024, 64) and v64.dtype == np.uint64
    v32, v64 = v32.get(), v64.get()
    np.testing.assert_array_equal(v32, (v64[:, :32] >> np.uint64(32)).astype(np.uint32))
    # v_k has its top k bits only, the leading one set (m_k odd and below 2^(k+1))
    k = np.arange(32)
    assert ((v32 >> (31 - k)) & 1).all() and ((v32 & ((1 << (31 - k)) - 1).astype(np.uint32)) == 0)[:, :13].all()
    s32 = cr.generate_direction_vectors(8, cr.direction_vector_set.SCRAMBLED_VECTOR_32).get()
    assert s32.dtype == np.uint32 and not np.array_equal(s32, v32[:8])
    c = cr.generate_scramble_constants32(10).get()
    assert c.dtype == np.uint32 and len(set(c)) == 10
    np.testing.assert_array_equal(cr.generate_scramble_constants32(4).get(), c[:4])
    assert cr.generate_scramble_constants64(3).dtype == np.uint64
    with pytest.raises(TypeError):
        cr.Sobol32RandomNumberGenerator(dir_vector=ga.to_gpu(v64[:4]))


@pytest.mark.skipif(cr.get_curand_version() is None, reason="libcurand is not installed")
def test_direction_vectors_are_curands_joe_kuo():
    ref32 = cr._curand_vectors(20000, 32)
    ref64 = cr._curand_vectors(20000, 64)
    np.testing.assert_array_equal(cr._vectors(1024, 32), ref32[:1024])
    np.testing.assert_array_equal(cr._vectors(1024, 64), ref64[:1024])
    assert cr.generate_direction_vectors(3000).shape == (3000, 32)


def test_rand_integers_and_minmax():
    for dt in (np.int32, np.uint32, np.int64):
        a = cr.rand((1000, 3), dt)
        assert a.dtype == dt and a.shape == (1000, 3)
        h = a.get()
        assert ga.min(a).get() == h.min() and ga.max(a).get() == h.max()
        assert h.min() < np.iinfo(dt).min // 2 or dt == np.uint32
    np.testing.assert_array_equal(cr.rand(8, np.int32, seed=3).get(), cr.rand(8, np.int32, seed=3).get())
