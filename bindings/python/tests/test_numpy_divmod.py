"""Floating ``floor_divide`` and ``remainder`` against NumPy (Python's divmod through
npy_divmod) bit for bit, the sign of zero included, except that ``floor_divide`` follows the
array API standard where one operand is infinite and the other finite (``expected``): every pair of signed zeros, infinities,
NaN and finite values, then random pairs, in float16, float32 and float64 (where the device
has f64)."""

import numpy as np
import pytest

import suanli.numpy as xp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SPECIAL = [0.0, -0.0, 5.0, -5.0, 0.5, -7.25, 3.0, -3.0, 1e30, -1e-30, np.inf, -np.inf, np.nan, 1.5]
DTYPES = ["float16", "float32"] + (["float64"] if "float64" in xp.__array_namespace_info__().dtypes() else [])


def operands(dtype):
    a, b = np.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    rng = np.random.default_rng(11)
    y = rng.choice([-1.0, 1.0], 300) * 10.0 ** rng.uniform(-3, 3, 300)
    x = np.where(rng.uniform(size=300) < 0.2, y * np.floor(rng.uniform(-20, 20, 300)),
                 rng.choice([-1.0, 1.0], 300) * 10.0 ** rng.uniform(-3, 5, 300))
    return (np.concatenate([a.ravel(), x]).astype(dtype), np.concatenate([b.ravel(), y]).astype(dtype))


def same_bits(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.itemsize]
    np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits))


def expected(name, a, b):
    """NumPy's result, with the array API standard's floor_divide where one operand is
    infinite and the other finite (±inf for an infinite dividend, ±0 for an infinite divisor,
    negative when the signs differ; NumPy gives NaN, and -1 for -5 // inf)."""
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
        if name == "floor_divide":
            a, b = np.broadcast_arrays(a, b)
            neg = np.signbit(a) != np.signbit(b)
            sign = np.where(neg, -1, 1).astype(want.dtype)
            want = np.where(np.isinf(a) & np.isfinite(b), sign * np.inf, want)
            want = np.where(np.isfinite(a) & np.isinf(b), sign * 0.0, want).astype(a.dtype)
    return want


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_matches_numpy_bit_for_bit(dtype, name):
    a, b = operands(dtype)
    same_bits(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), expected(name, a, b))
    # Through a transposed view, and with a 0-d infinite divisor broadcast.
    a2, b2 = a[:196].reshape(14, 14).T, b[:196].reshape(14, 14).T
    same_bits(getattr(xp, name)(xp.asarray(a[:196].reshape(14, 14)).T, xp.asarray(b[:196].reshape(14, 14)).T),
              expected(name, a2, b2))
    inf = np.asarray(np.inf, dtype=dtype)
    same_bits(getattr(xp, name)(xp.asarray(a), xp.asarray(inf)), expected(name, a, inf))
