"""``suanli.numpy.float16`` against NumPy's float16 on seeded inputs: host data both ways,
the correctly rounded operations (+ - * / sqrt, casts, nextafter) bit for bit, the
transcendental ones within one float16 ulp (both compute in float32 and round once, with
different float32 functions), reductions, promotion, sorting, indexing and matmul."""

import numpy as np
import pytest

import suanli.numpy as xp

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-24, -3 * 2.0**-20, 65504.0,
                    2049.0, 1e-5, -0.1], dtype=np.float16)


def sample(seed, n=200, lo=-100.0, hi=100.0, special=True):
    rng = np.random.default_rng(seed)
    v = rng.uniform(lo, hi, n).astype(np.float16)
    if special:
        v[: len(SPECIAL)] = SPECIAL
    return v


def same_bits(got, want):
    """Equal values, NaN where NaN, and the same sign of zero."""
    assert got.dtype == want.dtype == np.float16, (got.dtype, want.dtype)
    g, w = got.view(np.uint16), want.view(np.uint16)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(g[~nan], w[~nan])


def within_ulp(got, want, ulps=1):
    assert got.dtype == want.dtype == np.float16, (got.dtype, want.dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    ok = np.isfinite(want)
    diff = np.abs(got[ok].astype(np.float64) - want[ok].astype(np.float64))
    assert np.all(diff <= ulps * np.spacing(np.abs(want[ok]).astype(np.float16)).astype(np.float64))


def test_dtype_exists_and_round_trips():
    assert xp.float16 == np.float16
    assert "float16" in xp.__array_namespace_info__().dtypes()
    assert "float16" in xp.__array_namespace_info__().dtypes(kind="real floating")
    v = sample(1).reshape(8, 25)
    x = xp.asarray(v)
    assert x.dtype == xp.float16
    back = np.asarray(x)
    assert back.dtype == np.float16
    same_bits(back, v)
    same_bits(np.asarray(x.T), v.T)
    same_bits(np.asarray(x[::-2, 3::4]), v[::-2, 3::4])
    assert xp.asarray([1.5, 2.0], dtype=xp.float16).dtype == xp.float16
    assert xp.finfo(xp.float16).eps == float(np.finfo(np.float16).eps)
    assert xp.result_type(xp.float16, xp.float32) == xp.float32
    assert xp.result_type(xp.float16, xp.int8) == xp.float16


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_arithmetic_is_exact(op):
    a, b = sample(2), sample(3)
    b2 = sample(4, n=20, special=False)
    A = a.reshape(10, 20)
    f = getattr(np, op)
    with np.errstate(all="ignore"):
        same_bits(np.asarray(getattr(xp, op)(xp.asarray(a), xp.asarray(b))), f(a, b))
        same_bits(np.asarray(getattr(xp, op)(xp.asarray(A), xp.asarray(b2))), f(A, b2))
        # A Python float beside float16 stays float16.
        same_bits(np.asarray(getattr(xp, op)(xp.asarray(a), 0.3)), f(a, np.float16(0.3)))
        e = np.zeros((0, 3), np.float16)
        assert np.asarray(getattr(xp, op)(xp.asarray(e), xp.asarray(e))).shape == (0, 3)


def test_sqrt_square_nextafter_are_exact():
    a = np.abs(sample(5, lo=0, hi=60000))
    b = sample(6)
    with np.errstate(all="ignore"):
        same_bits(np.asarray(xp.sqrt(xp.asarray(a))), np.sqrt(a))
        same_bits(np.asarray(xp.square(xp.asarray(b))), np.square(b))
        c = sample(7)
        same_bits(np.asarray(xp.nextafter(xp.asarray(b), xp.asarray(c))), np.nextafter(b, c))
        same_bits(np.asarray(xp.floor(xp.asarray(b))), np.floor(b))
        same_bits(np.asarray(xp.maximum(xp.asarray(b), xp.asarray(c))), np.maximum(b, c))


@pytest.mark.parametrize("name", ["exp", "log", "sin", "cos", "tanh", "atan", "expm1", "log1p"])
def test_transcendental_within_one_ulp(name):
    lo, hi = (0.01, 100) if name.startswith("log") else (-8, 8)
    a = sample(8, lo=lo, hi=hi, special=False)
    with np.errstate(all="ignore"):
        within_ulp(np.asarray(getattr(xp, name)(xp.asarray(a))), getattr(np, name)(a))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32"])
def test_casts_are_exact(dtype):
    lo = 0 if dtype.startswith("u") or dtype == "bool" else -100
    hi = 1 if dtype == "bool" else 100
    a = sample(9, lo=lo, hi=hi, special=False)
    got = np.asarray(xp.astype(xp.asarray(a), dtype))
    np.testing.assert_array_equal(got, a.astype(dtype))
    assert got.dtype == np.dtype(dtype)
    rng = np.random.default_rng(10)
    if dtype == "bool":
        src = rng.integers(0, 2, 300).astype(bool)
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        src = rng.integers(max(info.min, -70000), min(info.max, 70000), 300).astype(dtype)
    else:
        src = rng.uniform(-70000, 70000, 300).astype(dtype)
        src[:4] = [65520.0, 65519.996, 2.0**-25, 3 * 2.0**-26]
    with np.errstate(all="ignore"):
        same_bits(np.asarray(xp.astype(xp.asarray(src), xp.float16)), src.astype(np.float16))


def test_reductions_round_once():
    a = sample(11, n=3 * 5 * 67, lo=-4, hi=4, special=False).reshape(3, 5, 67)
    x = xp.asarray(a)
    for axis in [None, 0, 2, (0, 2)]:
        got = np.asarray(xp.sum(x, axis=axis))
        want = a.astype(np.float32).sum(axis=axis).astype(np.float16)
        within_ulp(np.asarray(got), np.asarray(want))
        within_ulp(np.asarray(xp.mean(x, axis=axis)), np.asarray(np.mean(a, axis=axis)))
        same_bits(np.asarray(xp.max(x, axis=axis)), np.asarray(np.max(a, axis=axis)))
        same_bits(np.asarray(xp.min(x, axis=axis)), np.asarray(np.min(a, axis=axis)))
    want_var = a.astype(np.float64).var(axis=2).astype(np.float16)
    within_ulp(np.asarray(xp.var(x, axis=2)), want_var)
    np.testing.assert_array_equal(np.asarray(xp.argmax(x, axis=2)), np.argmax(a, axis=2))
    cs = np.asarray(xp.cumulative_sum(x, axis=2))
    assert cs.dtype == np.float16
    within_ulp(cs, np.cumsum(a.astype(np.float64), axis=2).astype(np.float16))


def test_promotion_sort_index_where_matmul():
    a = sample(12, n=40, special=False)
    x = xp.asarray(a)
    assert (x + xp.asarray(a.astype(np.float32))).dtype == xp.float32
    assert (x + xp.asarray(np.arange(40, dtype=np.int8))).dtype == xp.float16
    same_bits(np.asarray(x + xp.asarray(np.arange(40, dtype=np.int8))), a + np.arange(40, dtype=np.int8))
    same_bits(np.asarray(xp.sort(x)), np.sort(a))
    np.testing.assert_array_equal(np.asarray(xp.argsort(x, stable=True)), np.argsort(a, kind="stable"))
    same_bits(np.asarray(xp.unique_values(x)), np.unique(a))
    same_bits(np.asarray(x[x > 0]), a[a > 0])
    same_bits(np.asarray(xp.where(x > 0, x, 0.1)), np.where(a > 0, a, np.float16(0.1)))
    same_bits(np.asarray(xp.concat([x, x[:3]])), np.concatenate([a, a[:3]]))
    s = np.sort(a)
    np.testing.assert_array_equal(np.asarray(xp.searchsorted(xp.asarray(s), x)), np.searchsorted(s, a))
    m, n = a[:24].reshape(4, 6), a[16:40].reshape(6, 4)
    want = (m.astype(np.float32) @ n.astype(np.float32)).astype(np.float16)
    within_ulp(np.asarray(xp.asarray(m) @ xp.asarray(n)), want)
    y = xp.zeros((3, 4), dtype=xp.float16)
    y[1, ::2] = 0.1
    same_bits(np.asarray(y)[1, ::2], np.full(2, 0.1, np.float16))


def test_reductions_with_dtype_and_vecdot_do_not_round_early():
    h = np.array([65504, 65504], np.float16)
    got = np.asarray(xp.sum(xp.asarray(h), dtype=xp.float32))
    assert got.dtype == np.float32 and got == np.sum(h, dtype=np.float32)
    got = np.asarray(xp.cumulative_sum(xp.asarray(h), dtype=xp.float32))
    np.testing.assert_array_equal(got, np.cumsum(h, dtype=np.float32))
    # vecdot multiplies in float32 as matmul does: 300·300 would overflow binary16.
    a, b = np.array([300, 300], np.float16), np.array([300, -300], np.float16)
    got = np.asarray(xp.linalg.vecdot(xp.asarray(a), xp.asarray(b)))
    assert got.dtype == np.float16 and got == np.float16(0.0)
    r = np.random.default_rng(5)
    a, b = r.uniform(-4, 4, (17, 9)).astype(np.float16), r.uniform(-4, 4, (17, 9)).astype(np.float16)
    want = np.sum(a.astype(np.float64) * b.astype(np.float64), axis=-1).astype(np.float16)
    np.testing.assert_array_equal(np.asarray(xp.linalg.vecdot(xp.asarray(a), xp.asarray(b))), want)
