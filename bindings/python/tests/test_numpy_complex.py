"""complex64 elementwise functions, ``pow``, ``prod``, the scans, ``matmul`` and ``vecdot``
against NumPy's complex128 (each result compared with the reference rounded to complex64's
precision): seeded values over many magnitudes, near the branch points and on the axes
with both signs of zero, non-contiguous views, 0-d and empty shapes, and the standard's
special cases for infinities and NaN."""

import numpy as np
import pytest

import suanli.numpy as xp

FUNCS = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "sinh",
         "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "square", "sign",
         "round", "reciprocal"]
NP = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
      "acosh": "arccosh", "atanh": "arctanh"}
# The exponential family overflows float32 beyond |x| ~ 88: smaller inputs there.
SMALL = {"exp", "expm1", "sin", "cos", "sinh", "cosh"}


def values(rng, n, big):
    hi = 30 if big else 1.5
    mag = lambda: 10.0 ** rng.uniform(-6, hi, n) * rng.choice([-1, 1], n)  # noqa: E731
    parts = [
        mag() + 1j * mag(),
        rng.uniform(-4, 4, n) + 1j * rng.uniform(-4, 4, n),
        1 + rng.uniform(-1e-3, 1e-3, n) + 1j * rng.uniform(-1e-3, 1e-3, n),
        rng.uniform(-1e-3, 1e-3, n) + 1j * (rng.choice([-1, 1], n) + rng.uniform(-1e-3, 1e-3, n)),
    ]
    z = np.concatenate(parts).astype(np.complex64)
    axes = np.array([complex(3, 0), complex(-3, 0), complex(0, 3), complex(0, -3), complex(0.5, 0)],
                    np.complex64)
    neg0 = axes.copy()
    neg0.imag = np.copysign(0.0, -1.0)  # the other side of each branch cut
    return np.concatenate([z, axes, neg0])


def reference(name, z):
    with np.errstate(all="ignore"):
        if name == "round":
            return np.round(z.astype(np.complex128))
        return getattr(np, NP.get(name, name))(z.astype(np.complex128))


def check(got, want, rtol, what):
    got = np.asarray(got).astype(np.complex128)
    with np.errstate(over="ignore"):
        want = np.asarray(want).astype(np.complex64).astype(np.complex128)  # rounded to complex64
    ok = np.isfinite(want)
    err = np.abs(got[ok] - want[ok]) / np.maximum(np.abs(want[ok]), 1e-37)
    assert err.max(initial=0.0) <= rtol, (what, err.max(), got[ok][err.argmax()], want[ok][err.argmax()])


@pytest.mark.parametrize("name", FUNCS)
def test_function_against_numpy(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    z = values(rng, 64, name not in SMALL)
    f = getattr(xp, name)
    x = xp.asarray(z)
    rtol = 1e-6 if name in ("square", "round") else 4e-6
    got = f(x)
    assert got.dtype == xp.complex64 and got.shape == z.shape
    check(got, reference(name, z), rtol, name)
    # A strided, transposed view; a 0-d array; an empty one.
    m = z[: 16 * 8].reshape(16, 8)
    check(f(xp.asarray(m)[::2, ::-1].T), reference(name, m[::2, ::-1].T), rtol, name + " view")
    check(f(xp.asarray(z[3])), reference(name, z[3]), rtol, name + " 0-d")
    assert f(xp.asarray(np.zeros((0, 2), np.complex64))).shape == (0, 2)


SPECIAL = [complex(a, b) for a in (0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan)
           for b in (0.0, -0.0, 0.5, -2.0, np.inf, -np.inf, np.nan)]


# NumPy's complex expm1 is exp(z) - 1 (expm1(inf + 0j) is inf + NaN j, the standard's
# inf + 0j); its special cases are checked against the standard's list in
# tests/array_complex_math.rs and by the conformance suite.
@pytest.mark.parametrize("name", [f for f in FUNCS if f not in ("reciprocal", "expm1")])
def test_special_values_match_numpy(name):
    """Infinities, NaN and signed zeros in each part, as NumPy (C99 Annex G) gives them: NaN
    matches NaN, an infinity an infinity and a zero a zero (the standard leaves some of their
    signs open; tests/array_complex_math.rs checks the signs the standard fixes)."""
    z = np.array(SPECIAL, np.complex64)
    got = np.asarray(getattr(xp, name)(xp.asarray(z)))
    want = reference(name, z).astype(np.complex64)
    bad = []
    for zi, g, w in zip(z, got, want):
        if name == "sign" and np.isnan(zi):
            continue  # NumPy: the infinite part's limit (sign(inf + NaN j) = 1); the standard: NaN
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            if np.isnan(wp):
                same = np.isnan(gp)
            elif np.isinf(wp):
                same = np.isinf(gp)  # the standard leaves some infinities' signs open
            elif wp == 0:
                same = gp == 0
            else:
                same = abs(gp - wp) <= 4e-6 * abs(wp)
            if not same:
                bad.append((zi, g, w))
                break
    assert not bad, (name, bad)


def test_pow_against_numpy():
    rng = np.random.default_rng(5)
    a = values(rng, 16, False)
    b = values(rng, 16, False)[: a.size]
    b[::4] = np.arange(b[::4].size) % 7 - 3  # small integer exponents: repeated products
    a[:3] = 0  # 0 ** b: 0 where Re b > 0, else NaN (NumPy 2's rule)
    with np.errstate(all="ignore"):
        want = a.astype(np.complex128) ** b.astype(np.complex128)
    check(xp.asarray(a) ** xp.asarray(b), want, 2e-5, "pow")
    x = xp.asarray(a)
    check(x ** 2, a.astype(np.complex128) ** 2, 1e-6, "z**2")
    check(x ** 0.5, a.astype(np.complex128) ** 0.5, 2e-5, "z**0.5")
    check(2.0 ** x, 2.0 ** a.astype(np.complex128), 2e-5, "2**z")
    check(x ** (0.5 + 1j), a.astype(np.complex128) ** (0.5 + 1j), 2e-5, "z**(0.5+1j)")
    r = xp.asarray(np.array([2.0, 0.5], np.float32)) ** 1j
    assert r.dtype == xp.complex64
    check(r, np.array([2.0, 0.5]) ** 1j, 2e-5, "real**1j")
    y = xp.asarray(a.copy())
    y **= 2
    check(y, a.astype(np.complex128) ** 2, 1e-6, "**=")


def cunits(rng, shape):
    t = rng.uniform(-np.pi, np.pi, shape)
    r = 1 + 0.1 * rng.standard_normal(shape)
    return (r * np.exp(1j * t)).astype(np.complex64)


@pytest.mark.parametrize("shape", [(5, 7), (3, 1500), (4, 0), (1, 1)])
def test_prod_and_scans(shape):
    rng = np.random.default_rng(shape[1])
    a = cunits(rng, shape)
    ref = a.astype(np.complex128)
    x = xp.asarray(a)
    check(xp.prod(x, axis=1), np.prod(ref, axis=1), 1e-4, "prod")
    check(xp.prod(x.T, axis=0, keepdims=True), np.prod(ref.T, axis=0, keepdims=True), 1e-4, "prod")
    check(xp.prod(x), np.prod(ref), 1e-4, "prod all")
    check(xp.cumulative_sum(x, axis=1), np.cumsum(ref, axis=1), 1e-5, "cumsum")
    check(xp.cumulative_prod(x, axis=1), np.cumprod(ref, axis=1), 1e-4, "cumprod")
    got = xp.cumulative_prod(x[:, ::-1], axis=1, include_initial=True)
    want = np.concatenate([np.ones((shape[0], 1)), np.cumprod(ref[:, ::-1], axis=1)], axis=1)
    check(got, want, 1e-4, "cumprod initial")
    got = xp.cumulative_sum(x.T, axis=0, include_initial=True)
    want = np.concatenate([np.zeros((1, shape[0])), np.cumsum(ref.T, axis=0)], axis=0)
    check(got, want, 1e-5, "cumsum initial")


@pytest.mark.parametrize("mkn", [(1, 1, 1), (3, 5, 2), (17, 33, 9), (2, 0, 3)])
def test_matmul_and_vecdot(mkn):
    m, k, n = mkn
    rng = np.random.default_rng(m * 100 + k)
    a = (rng.standard_normal((m, k)) + 1j * rng.standard_normal((m, k))).astype(np.complex64)
    b = (rng.standard_normal((n, k)) + 1j * rng.standard_normal((n, k))).astype(np.complex64)
    ref = a.astype(np.complex128) @ b.astype(np.complex128).T
    got = np.asarray(xp.asarray(a) @ xp.asarray(b).T)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).T.astype(np.float64)
    assert np.all(np.abs(got - ref) <= 1e-5 * np.maximum(scale, 1e-30))
    # vecdot conjugates its first operand, as the standard says.
    v = np.asarray(xp.linalg.vecdot(xp.asarray(a), xp.asarray(a)))
    w = np.sum(np.conj(a.astype(np.complex128)) * a, axis=-1)
    assert np.all(np.abs(v - w) <= 1e-5 * np.maximum(np.abs(w), 1))
    real = np.asarray(xp.asarray(a) @ xp.asarray(np.ones((k, 2), np.float32)))
    assert np.allclose(real, a.astype(np.complex128) @ np.ones((k, 2)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 7), (3, 1500), (1, 1)])
def test_var_and_std_as_numpy(shape):
    rng = np.random.default_rng(shape[1] + 7)
    a = (cunits(rng, shape) + np.complex64(30 - 20j)).astype(np.complex64)
    ref = a.astype(np.complex128)
    x = xp.asarray(a)
    for axis in (None, 0, 1):
        for corr in (0, 1):
            if (ref.size if axis is None else shape[axis]) <= corr:
                continue
            got = xp.var(x, axis=axis, correction=corr)
            assert got.dtype == xp.float32
            want = np.var(ref, axis=axis, ddof=corr)
            assert np.allclose(np.asarray(got), want, rtol=1e-4, atol=1e-6), (axis, corr)
            got = np.asarray(xp.std(x.T, axis=axis, correction=corr))
            want = np.std(ref.T, axis=axis, ddof=corr)
            assert np.allclose(got, want, rtol=1e-4, atol=1e-6), (axis, corr)


def test_sort_unique_and_searchsorted_in_numpys_order():
    # NumPy sorts complex lexicographically, real part first, with NaN classes last:
    # R + Rj < R + nanj < nan + Rj < nan + nanj, each by its non-NaN part; -0 equals +0.
    nan, inf = np.nan, np.inf
    a = np.array([1 + 2j, 1 - 2j, -1 + 0j, complex(1, nan), complex(nan, 1), complex(nan, nan),
                  1 + 2j, complex(-0.0, 0), 0j, complex(inf, -inf), complex(-inf, 3), 2.5 - 1j,
                  1 + 2j, complex(1, -0.0), complex(-3, nan), complex(nan, -4)], np.complex64)
    rng = np.random.default_rng(5)
    b = (rng.integers(-3, 3, 300) + 1j * rng.integers(-2, 2, 300)).astype(np.complex64)
    for v in (a, b):
        x = xp.asarray(v)
        order = np.asarray(xp.argsort(x)).astype(np.int64)
        assert np.array_equal(order, np.argsort(v, kind="stable")), v
        got = np.asarray(xp.sort(x))
        assert np.array_equal(got, np.sort(v, kind="stable"), equal_nan=True)
        u = xp.unique_counts(x)
        # The standard's unique: every NaN distinct (NumPy's equal_nan=False).
        vals, counts = np.unique(v, return_counts=True, equal_nan=False)
        assert np.array_equal(np.asarray(u.values), vals, equal_nan=True)
        assert np.array_equal(np.asarray(u.counts), counts)
    s = np.sort(b)
    got = np.asarray(xp.searchsorted(xp.asarray(s), xp.asarray(b), side="right")).astype(np.int64)
    assert np.array_equal(got, np.searchsorted(s, b, side="right"))


def test_still_refused():
    x = xp.asarray(np.ones(3, np.complex64))
    for f in (xp.floor, xp.ceil, xp.trunc, xp.signbit):
        with pytest.raises(TypeError):
            f(x)
    with pytest.raises(TypeError):
        xp.maximum(x, x)
    with pytest.raises(TypeError):
        x < x
