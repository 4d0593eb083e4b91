"""``suanli.numpy.float64`` against NumPy's float64: NumPy data keeps its dtype, creation
functions, casts both ways, arithmetic bit-exact (+ - * / sqrt: a kernel computing in
float32 anywhere fails), comparisons, rounding, floor division and remainder, reductions
within a few ulp, promotion, views, and the TypeError of what float64 does not take yet. On a
device without f64 (WGPU_BACKEND=gl, Metal) float64 is a TypeError and only that is checked."""

import numpy as np
import pytest

import suanli.numpy as xp

# NumPy's reference divides by zero on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")

HAS_F64 = "float64" in xp.__array_namespace_info__().dtypes()


def values(seed, shape, scale=100.0):
    return np.random.default_rng(seed).uniform(-scale, scale, shape)


def same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.skipif(HAS_F64, reason="the device computes in float64")
def test_float64_is_a_type_error_without_f64():
    with pytest.raises(TypeError, match="SHADER_F64"):
        xp.asarray(np.ones(3))
    with pytest.raises(TypeError):
        xp.zeros(3, dtype=xp.float64)
    with pytest.raises(TypeError):
        xp.astype(xp.ones(3), xp.float64)
    assert xp.__array_namespace_info__().default_dtypes()["real floating"] == xp.float32


pytestmark_f64 = pytest.mark.skipif(not HAS_F64, reason="the device has no f64")


@pytestmark_f64
def test_numpy_float64_keeps_its_dtype_and_bits():
    a = values(1, (5, 7))
    x = xp.asarray(a)
    assert x.dtype == xp.float64
    same(x, a)
    same(x.T, a.T)
    same(x[::-2, 1::3], a[::-2, 1::3])
    same(x[2, 3], a[2, 3])
    same(x[:0], a[:0])
    assert xp.asarray([0.1, 0.2]).dtype == xp.float32  # Python floats: the default float
    assert xp.asarray([0.1, 0.2], dtype=xp.float64).dtype == xp.float64
    assert xp.__array_namespace_info__().default_dtypes()["real floating"] == xp.float32


@pytestmark_f64
def test_creation_functions():
    same(xp.zeros((2, 3), dtype=xp.float64), np.zeros((2, 3)))
    same(xp.ones((), dtype=xp.float64), np.ones(()))
    same(xp.full((4,), 1 / 3, dtype=xp.float64), np.full((4,), 1 / 3))
    same(xp.arange(0.0, 1.0, 0.125, dtype=xp.float64), np.arange(0.0, 1.0, 0.125))
    same(xp.eye(3, 4, k=1, dtype=xp.float64), np.eye(3, 4, k=1))
    np.testing.assert_allclose(
        np.asarray(xp.linspace(0.0, 1.0, 11, dtype=xp.float64)), np.linspace(0.0, 1.0, 11), rtol=0, atol=2e-16
    )


@pytestmark_f64
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "copysign"])
def test_binary_ops_are_exact(op):
    a, b = values(2, (4, 6)), values(3, (4, 6))
    b[0, 0] = 0.0
    a[1, 1] = np.nan
    x, y = xp.asarray(a), xp.asarray(b)
    f, g = getattr(xp, op), getattr(np, op)
    same(f(x, y), g(a, b))
    same(f(x.T, y.T), g(a.T, b.T))
    same(f(x[:, :1], y[:1]), g(a[:, :1], b[:1]))  # broadcast
    same(f(x, 0.1), g(a, 0.1))


@pytestmark_f64
def test_unary_ops_and_comparisons():
    a = values(4, (50,), 10.0)
    a[:6] = [2.5, -2.5, 0.5, np.nan, np.inf, 5e-320]
    x = xp.asarray(a)
    for op in ["negative", "abs", "floor", "ceil", "trunc", "round", "square"]:
        same(getattr(xp, op)(x), getattr(np, op)(a))
    same(xp.sqrt(xp.abs(x)), np.sqrt(np.abs(a)))
    for op in ["isnan", "isinf", "isfinite", "signbit"]:
        np.testing.assert_array_equal(np.asarray(getattr(xp, op)(x)), getattr(np, op)(a))
    b = np.roll(a, 3)
    y = xp.asarray(b)
    for op in ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]:
        np.testing.assert_array_equal(np.asarray(getattr(xp, op)(x, y)), getattr(np, op)(a, b))
    same(xp.where(x > y, x, y), np.where(a > b, a, b))
    same(xp.clip(x, -1.5, 2.25), np.clip(a, -1.5, 2.25))


@pytestmark_f64
def test_floor_divide_and_remainder():
    a = values(5, (200,), 1e6)
    b = values(6, (200,), 10.0)
    a[0], b[0] = 1e300, 3.3e-7
    same(xp.floor_divide(xp.asarray(a), xp.asarray(b)), np.floor_divide(a, b))
    same(xp.remainder(xp.asarray(a), xp.asarray(b)), np.remainder(a, b))


@pytestmark_f64
def test_sort_argsort_searchsorted_match_numpy():
    a = values(12, (5, 40)) + values(13, (5, 40)) * 1e-12  # both words matter
    a[0, :4] = [np.nan, -0.0, 0.0, np.inf]
    a[1, :10] = 1.5  # ties: stable
    for axis in (0, 1):
        same(xp.sort(xp.asarray(a), axis=axis), np.sort(a, axis=axis, kind="stable"))
        np.testing.assert_array_equal(np.asarray(xp.argsort(xp.asarray(a), axis=axis)),
                                      np.argsort(a, axis=axis, kind="stable"))
    s = np.sort(a[2])
    v = np.concatenate([values(14, (30,)), s[:5]])
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.asarray(xp.searchsorted(xp.asarray(s), xp.asarray(v), side=side)),
                                      np.searchsorted(s, v, side=side))


@pytestmark_f64
def test_casts_both_ways():
    a = values(7, (30,), 300.0)
    x = xp.asarray(a)
    for d in ["float32", "int32", "int16", "uint8", "bool", "complex64"]:
        got = np.asarray(xp.astype(x, getattr(xp, d)))
        want = a.astype(d) if d in ("float32", "bool", "complex64") else a.astype(np.int64).astype(d)
        np.testing.assert_array_equal(got, want)
    for d in ["float32", "int32", "uint16", "int8", "bool"]:
        h = (a if d != "bool" else a > 0).astype(d)
        same(xp.astype(xp.asarray(h), xp.float64), h.astype(np.float64))


@pytestmark_f64
def test_reductions_within_a_few_ulp():
    a = values(8, (3, 2500), 1e4)
    x = xp.asarray(a)
    eps = np.finfo(np.float64).eps
    for ax in [None, 0, 1]:
        s = np.sum(a, axis=ax)
        np.testing.assert_allclose(np.asarray(xp.sum(x, axis=ax)), s, rtol=0, atol=8 * eps * np.abs(a).sum())
        np.testing.assert_allclose(np.asarray(xp.mean(x, axis=ax)), np.mean(a, axis=ax), rtol=1e-14, atol=1e-12)
        same(xp.max(x, axis=ax), np.max(a, axis=ax))
        same(xp.min(x, axis=ax), np.min(a, axis=ax))
        np.testing.assert_allclose(np.asarray(xp.var(x, axis=ax)), np.var(a, axis=ax), rtol=1e-13)
        np.testing.assert_allclose(np.asarray(xp.std(x, axis=ax, correction=1)), np.std(a, axis=ax, ddof=1), rtol=1e-13)
    np.testing.assert_array_equal(np.asarray(xp.argmax(x, axis=1)), np.argmax(a, axis=1))
    np.testing.assert_array_equal(np.asarray(xp.argmin(x, axis=0)), np.argmin(a, axis=0))
    p = 1.0 + values(9, (4, 10), 0.5)
    np.testing.assert_allclose(np.asarray(xp.prod(xp.asarray(p), axis=1)), np.prod(p, axis=1), rtol=2e-15)
    assert xp.sum(xp.asarray(p)).dtype == xp.float64


@pytestmark_f64
def test_promotion():
    x = xp.asarray(values(10, (4,)))
    assert (x + xp.ones(4, dtype=xp.float32)).dtype == xp.float64
    assert (xp.ones(4, dtype=xp.int32) * x).dtype == xp.float64
    assert xp.result_type(xp.float32, xp.float64) == xp.float64
    assert xp.result_type(xp.int8, xp.float64) == xp.float64
    assert xp.result_type(xp.int8, xp.float32) == xp.float32
    with pytest.raises(TypeError):
        xp.result_type(xp.complex64, xp.float64)


@pytestmark_f64
def test_what_float64_does_not_take_is_a_type_error():
    x = xp.asarray(values(11, (4, 4)))
    # matmul and solve/inv/det/slogdet/cholesky compute in float64: test_numpy_linalg_wide.py;
    # qr, svd, svdvals, eigh, eigvalsh: test_numpy_linalg_spectral_f64.py.
    for f in [xp.fft.fft, xp.fft.rfft]:
        with pytest.raises(TypeError):
            f(x)


@pytest.mark.skipif(not HAS_F64, reason="the device has no float64")
def test_reductions_with_dtype_accumulate_in_it():
    # Cast first, then reduce: a float64 result computed in float32 or int32 would differ.
    big = np.array([16777216, 1, 1, 1], np.float32)
    for f in ("sum", "prod"):
        for a in (big, np.array([1e30, 1e30, 1e-30], np.float32), np.array([2**31 - 1, 1], np.int32)):
            got = np.asarray(getattr(xp, f)(xp.asarray(a), dtype=xp.float64))
            same(got, getattr(np, f)(a, dtype=np.float64))
    # Scans too: 16777216 + 1 + 1 + 1 needs float64 all the way.
    same(np.asarray(xp.cumulative_sum(xp.asarray(big), dtype=xp.float64)), np.cumsum(big, dtype=np.float64))
    a = values(12, (3, 2500))
    np.testing.assert_allclose(np.asarray(xp.cumulative_sum(xp.asarray(a), axis=1)), np.cumsum(a, axis=1), rtol=0, atol=1e-10)
    got = np.asarray(xp.cumulative_prod(xp.asarray(a[:, :50]), axis=1, include_initial=True))
    want = np.concatenate([np.ones((3, 1)), np.cumprod(a[:, :50], axis=1)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    diag = np.diag(np.array([16777216, 1], np.float32))
    same(np.asarray(xp.linalg.trace(xp.asarray(diag), dtype=xp.float64)), np.trace(diag, dtype=np.float64))


@pytest.mark.skipif(not HAS_F64, reason="the device has no float64")
def test_promotion_refusals_are_type_errors():
    # complex64 with float64 would be complex128, not held: a TypeError as NumPy's
    # DTypePromotionError is, with an array or a Python complex alike.
    x = xp.asarray(np.ones(2))
    with pytest.raises(TypeError):
        x * 1j
    with pytest.raises(TypeError):
        x + xp.asarray(np.ones(2, np.complex64))


def ulp_error(got, want):
    """The largest distance in ulp of `got` from `want` (NaN to NaN is 0; a signed zero of
    the wrong sign or a NaN against a number is infinite)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)

    def order(a):
        # Python integers: int64 differences could overflow, float64 ones round.
        return [b if b >= 0 else -(2**63) - b for b in a.view(np.int64).ravel().tolist()]

    both_nan = (np.isnan(got) & np.isnan(want)).ravel()
    bad = (np.isnan(got) != np.isnan(want)).ravel()
    bad |= ((got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))).ravel()
    d = np.array([float(abs(p - q)) for p, q in zip(order(got), order(want))])
    d = np.where(both_nan, 0.0, d)
    d = np.where(bad, np.inf, d)
    return float(d.max()) if d.size else 0.0


def math_inputs(seed, lo, hi):
    rng = np.random.default_rng(seed)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 5e-324, 1e308, -1e308]
    mag = 2.0 ** rng.uniform(-60, 60, 1500) * rng.choice([-1.0, 1.0], 1500)
    return np.concatenate([special, mag, rng.uniform(lo, hi, 1500)])


# Each function, its uniform range and the bound in ulp against NumPy's float64 (the
# Rust tests, against the platform libm, measure 1 ulp for most and 2 for the inverse
# hyperbolic functions and tanh; NumPy's own results are within an ulp, hence the slack).
UNARY_F64 = [
    ("exp", -746, 710, 2), ("expm1", -40, 710, 2), ("log", 0, 4, 2), ("log1p", -1, 4, 2),
    ("log2", 0, 4, 2), ("log10", 0, 4, 2), ("sin", -30, 30, 2), ("cos", -30, 30, 3),
    ("tan", -30, 30, 3), ("asin", -1, 1, 2), ("acos", -1, 1, 2), ("atan", -4, 4, 2),
    ("sinh", -712, 712, 2), ("cosh", -712, 712, 2), ("tanh", -20, 20, 3),
    ("asinh", -8, 8, 3), ("acosh", 0.5, 8, 3), ("atanh", -1, 1, 3),
]


@pytestmark_f64
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,lo,hi,bound", UNARY_F64)
def test_transcendental_functions_within_a_few_ulp_of_numpy(name, lo, hi, bound):
    x = math_inputs(len(name), lo, hi)
    got = getattr(xp, name)(xp.asarray(x))
    assert got.dtype == xp.float64
    want = getattr(np, name)(x)
    assert ulp_error(np.asarray(got), want) <= bound, name
    # A transposed view, 0-d and empty.
    m = x[:1200].reshape(30, 40)
    t = getattr(xp, name)(xp.asarray(m).T)
    assert ulp_error(np.asarray(t), getattr(np, name)(m.T)) <= bound
    assert ulp_error(np.asarray(getattr(xp, name)(xp.asarray(np.float64(0.25)))), getattr(np, name)(0.25)) <= bound
    assert getattr(xp, name)(xp.asarray(np.zeros((0, 3)))).shape == (0, 3)


@pytestmark_f64
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_binary_functions_within_a_few_ulp_of_numpy():
    rng = np.random.default_rng(5)
    a = np.concatenate([math_inputs(1, -100, 100), rng.uniform(-5, 5, 500)])
    b = np.concatenate([math_inputs(2, -100, 100), rng.uniform(-5, 5, 500)])
    for name, np_name, bound in [("atan2", "arctan2", 1), ("hypot", "hypot", 1),
                                 ("nextafter", "nextafter", 0)]:
        got = getattr(xp, name)(xp.asarray(a), xp.asarray(b))
        assert ulp_error(np.asarray(got), getattr(np, np_name)(a, b)) <= bound, name
    # logaddexp: the larger operand plus log1p(exp(-|a - b|)), as NumPy's; where the sum
    # cancels to near 0 only an error relative to the operands means anything.
    got = np.asarray(xp.logaddexp(xp.asarray(a), xp.asarray(b)))
    want = np.logaddexp(a, b)
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin], want[~fin])
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), np.abs(want))[fin]
    assert np.all(np.abs(got[fin] - want[fin]) <= 4 * np.spacing(scale))
    # pow: positive bases of every size, negative bases with integer exponents.
    x = np.abs(math_inputs(3, 0, 1000))
    y = rng.uniform(-3, 3, x.size)
    assert ulp_error(np.asarray(xp.pow(xp.asarray(x), xp.asarray(y))), np.power(x, y)) <= 2
    x = -rng.uniform(0.1, 10, 500)
    y = np.round(rng.uniform(-40, 40, 500))
    assert ulp_error(np.asarray(xp.pow(xp.asarray(x), xp.asarray(y))), np.power(x, y)) <= 2
    # Broadcast with a Python scalar; integer powers exact.
    same(xp.pow(xp.asarray(np.arange(20.0)), 3), np.arange(20.0) ** 3)
    # Not float32: exp(1e-10) - 1 keeps 1e-10 to float64 precision.
    e = np.asarray(xp.exp(xp.asarray(np.array([1e-10]))))[0]
    assert abs((e - 1.0) - 1e-10) < 1e-16
