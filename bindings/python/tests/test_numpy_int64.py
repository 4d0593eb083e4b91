"""``suanli.numpy.int64``/``uint64`` against NumPy's: NumPy data keeps its dtype, creation
functions, casts both ways, wrapping arithmetic exactly equal (values span all 64 bits and
sit near the limits: a kernel computing in 32 bits anywhere fails), floor division and
remainder signs, shifts past the width, comparisons, reductions, promotion, Python scalars
beyond 2**53, views, and the TypeError of what int64 does not take yet. On a device without
SHADER_INT64 (WGPU_BACKEND=gl, Metal) int64 is a TypeError and only that is checked."""

import numpy as np
import pytest

import suanli.numpy as xp

HAS_I64 = "int64" in xp.__array_namespace_info__().dtypes()
HAS_F64 = "float64" in xp.__array_namespace_info__().dtypes()
I64 = np.iinfo(np.int64)


def values(seed, shape, dtype="int64"):
    """All 64 bits in use, with the limits, 0, ±1 and ±2**32 among them."""
    rng = np.random.default_rng(seed)
    a = rng.integers(I64.min, I64.max, size=shape, dtype=np.int64, endpoint=True)
    flat = a.reshape(-1)
    special = np.array([I64.min, I64.max, -1, 0, 1, 2**32, -(2**32), 7], dtype=np.int64)
    flat[: min(flat.size, 8)] = special[: min(flat.size, 8)]
    flat[8::5] >>= 40  # some small values, so products and shifts stay interesting
    return a.astype(dtype)


def same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(HAS_I64, reason="the device computes in int64")
def test_int64_is_a_type_error_without_shader_int64():
    with pytest.raises(TypeError, match="SHADER_INT64"):
        xp.asarray(np.ones(3, dtype=np.int64))
    with pytest.raises(TypeError):
        xp.zeros(3, dtype=xp.uint64)
    with pytest.raises(TypeError):
        xp.astype(xp.ones(3), xp.int64)
    with pytest.raises(TypeError):  # uint32 with int8 computes in int64
        xp.ones(3, dtype=xp.uint32) == xp.ones(3, dtype=xp.int8)
    assert xp.asarray([1, 2]).dtype == xp.int32


pytestmark_i64 = pytest.mark.skipif(not HAS_I64, reason="the device has no int64")


@pytestmark_i64
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_numpy_data_keeps_its_dtype_and_bits(dtype):
    a = values(1, (5, 7), dtype)
    x = xp.asarray(a)
    assert x.dtype == np.dtype(dtype)
    same(x, a)
    same(x.T, a.T)
    same(x[::-2, 1::3], a[::-2, 1::3])
    same(x[2, 3], a[2, 3])
    same(x[:0], a[:0])
    assert xp.asarray([1, 2]).dtype == xp.int32  # Python ints: the default integer
    assert xp.asarray([2**40], dtype=xp.int64).dtype == xp.int64
    assert xp.__array_namespace_info__().default_dtypes()["integral"] == xp.int32


@pytestmark_i64
def test_creation_functions():
    same(xp.zeros((2, 3), dtype=xp.int64), np.zeros((2, 3), np.int64))
    same(xp.ones((), dtype=xp.uint64), np.ones((), np.uint64))
    same(xp.full((2, 2), 2**62 + 1, dtype=xp.int64), np.full((2, 2), 2**62 + 1, np.int64))
    same(xp.full((3,), 2**64 - 1, dtype=xp.uint64), np.full((3,), 2**64 - 1, np.uint64))
    same(xp.arange(2**40, 2**40 + 10, 3, dtype=xp.int64), np.arange(2**40, 2**40 + 10, 3, dtype=np.int64))
    same(xp.arange(10, 0, -3, dtype=xp.uint64), np.arange(10, 0, -3, dtype=np.uint64))
    same(xp.eye(3, 4, k=1, dtype=xp.int64), np.eye(3, 4, k=1, dtype=np.int64))
    same(xp.zeros((0, 2), dtype=xp.int64), np.zeros((0, 2), np.int64))


BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum", "minimum",
          "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
          "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
          "logical_or", "logical_xor", "pow"]
NP_NAME = {"bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift", "pow": "power"}


def np_ref(name, a, b):
    with np.errstate(all="ignore"):
        if name in ("bitwise_left_shift", "bitwise_right_shift"):
            # NumPy's shifts past the width: 0 (a negative value right-shifted: -1).
            bits = a.dtype.itemsize * 8
            big = (b < 0) | (b >= bits)
            b2 = np.where(big, 0, b)
            r = getattr(np, NP_NAME[name])(a, b2)
            if name == "bitwise_left_shift" or a.dtype.kind == "u":
                return np.where(big, 0, r).astype(a.dtype)
            return np.where(b < 0, 0, np.where(b >= bits, np.where(a < 0, -1, 0), r)).astype(a.dtype)
        if name == "pow":
            r = np.power(a, np.abs(b) if a.dtype.kind == "i" else b)
            if a.dtype.kind == "i":
                neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
                r = np.where(b < 0, neg, r).astype(a.dtype)
            return r
        if name in ("floor_divide", "remainder"):
            r = getattr(np, name)(a, b)
            return np.where(b == 0, 0, r).astype(r.dtype)
        return getattr(np, NP_NAME.get(name, name))(a, b)


@pytestmark_i64
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_operations_wrap_as_numpy(name, dtype):
    a = values(2, (4, 6), dtype)
    b = values(3, (4, 6), dtype)
    if name in ("bitwise_left_shift", "bitwise_right_shift", "pow"):
        b[:, ::2] = (np.arange(12).reshape(4, 3) * 7 % 70).astype(dtype)
    b[0, 1] = a[0, 1]
    x, y = xp.asarray(a), xp.asarray(b)
    fn = getattr(xp, name)
    same(fn(x, y), np_ref(name, a, b))
    same(fn(x.T, y.T), np_ref(name, a.T, b.T))
    same(fn(x[::-1, ::2], y[1, ::2]), np_ref(name, a[::-1, ::2], b[1, ::2]))  # strided, broadcast
    same(fn(x[1, 2], y[2, 2]), np_ref(name, a[1, 2], b[2, 2]))  # 0-d
    same(fn(x[:0], y[:0]), np_ref(name, a[:0], b[:0]))


@pytestmark_i64
def test_unary_where_and_python_scalars():
    a = values(4, (3, 5))
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        for name in ("negative", "abs", "sign", "bitwise_invert", "square", "logical_not",
                     "positive", "floor", "ceil", "trunc"):
            ref = getattr(np, {"bitwise_invert": "invert"}.get(name, name))(a)
            same(getattr(xp, name)(x), ref)
    same(xp.where(x > 0, x, -x), np.where(a > 0, a, -a))
    big = 2**53 + 1
    same(x + big, a + np.int64(big))
    same(big - x, np.int64(big) - a)
    same(x * 3, a * 3)
    u = xp.asarray(a.astype(np.uint64))
    same(u // 7, a.astype(np.uint64) // np.uint64(7))
    same(xp.clip(x, -(2**40), 2**40), np.clip(a, -(2**40), 2**40))
    # Python ints past int64 beside uint64 (NumPy 2 takes every uint64 value), exact.
    ua = a.astype(np.uint64)
    with np.errstate(all="ignore"):
        for big in (2**63, 2**64 - 1, 2**64 - 3):
            same(u + big, ua + np.uint64(big))
            same(big - u, np.uint64(big) - ua)
            same(xp.where(u > 5, u, big), np.where(ua > 5, ua, np.uint64(big)))
    # Out of the dtype's range: NumPy's OverflowError, at the exact boundary.
    for arr, bad in ((u, 2**64), (u, -1), (x, 2**63), (x, -(2**63) - 1),
                     (xp.asarray(np.int8([1])), 128), (xp.asarray(np.int8([1])), -129)):
        with pytest.raises(OverflowError):
            arr + bad
        np_arr = np.asarray(arr.get())
        with pytest.raises(OverflowError):
            np_arr + bad
    same(x + (2**63 - 1), a + np.int64(2**63 - 1))
    with pytest.raises(OverflowError):
        u + 2**200


@pytestmark_i64
def test_casts_both_ways():
    a = values(5, (20,))
    x = xp.asarray(a)
    for d in ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64", "float32"):
        same(xp.astype(x, d), a.astype(d))
    if HAS_F64:
        same(xp.astype(x, "float64"), a.astype(np.float64))
        f = np.array([2.5e15 + 0.75, -3.99, 1e15, -0.5, 2.0**62], dtype=np.float64)
        same(xp.astype(xp.asarray(f), "int64"), f.astype(np.int64))
    f = np.array([2.5e15, -3.99, 1e10, -0.5, 2.0**62, -(2.0**63)], dtype=np.float32)
    same(xp.astype(xp.asarray(f), "int64"), f.astype(np.int64))  # in range: NumPy's is defined
    for d in ("int8", "int32", "uint32", "bool"):
        h = a.astype(d)
        same(xp.astype(xp.asarray(h), "int64"), h.astype(np.int64))
        same(xp.astype(xp.asarray(h), "uint64"), h.astype(np.int64).astype(np.uint64))


@pytestmark_i64
def test_promotion():
    assert xp.result_type(xp.int64, xp.int8) == xp.int64
    assert xp.result_type(xp.uint32, xp.int8) == xp.int64
    assert xp.result_type(xp.uint64, xp.uint8) == xp.uint64
    assert xp.result_type(xp.int64, xp.float32) == xp.float32
    with pytest.raises(TypeError):
        xp.result_type(xp.uint64, xp.int64)
    u = np.array([2**32 - 1, 0], np.uint32)
    s = np.array([-1, -128], np.int8)
    same(xp.asarray(u) - xp.asarray(s), u.astype(np.int64) - s)
    with pytest.raises(TypeError):
        xp.asarray(np.ones(2, np.uint64)) + xp.asarray(np.ones(2, np.int64))
    r = xp.asarray(np.array([3, 4], np.int64)) + xp.asarray(np.array([1, 2], np.int32))
    assert r.dtype == xp.int64


@pytestmark_i64
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_sorting_and_unique_as_numpy(dtype):
    a = np.concatenate([values(8, (40,), dtype), np.array([5, 5, 2**32 + 5, 7, 5], dtype)])
    x = xp.asarray(a)
    same(xp.sort(x), np.sort(a, kind="stable"))
    same(xp.sort(x, descending=True), np.sort(a)[::-1])
    got = np.asarray(xp.argsort(x)).astype(np.int64)
    assert np.array_equal(got, np.argsort(a, kind="stable"))
    u = xp.unique_counts(x)
    vals, counts = np.unique(a, return_counts=True)
    same(u.values, vals)
    assert np.array_equal(np.asarray(u.counts), counts)
    s = np.sort(a)
    for side in ("left", "right"):
        got = np.asarray(xp.searchsorted(xp.asarray(s), x, side=side)).astype(np.int64)
        assert np.array_equal(got, np.searchsorted(s, a, side=side)), side


@pytestmark_i64
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_scans_wrap_as_numpy(dtype):
    a = values(9, (3, 2500), dtype)
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        same(xp.cumulative_sum(x, axis=1), np.cumsum(a, axis=1))
        same(xp.cumulative_sum(x.T, axis=0), np.cumsum(a.T, axis=0))
        same(xp.cumulative_prod(x[:, :40], axis=1), np.cumprod(a[:, :40], axis=1))


@pytestmark_i64
def test_arange_is_exact_over_the_whole_range():
    cases = [(2**53, 2**53 + 5, 1, "int64"), (2**53 + 1, 2**53 + 4, 1, "int64"),
             (2**63, 2**63 + 4096, 1024, "uint64"), (2**63, 2**63 + 3, 1, "uint64"),
             (10, -10, -3, "int64"), (2**64 - 1, 2**64 - 6, -2, "uint64"),
             (-(2**63), -(2**63) + 3, 1, "int64"), (5, 5, 1, "int64"), (0, 10, 3, "uint64")]
    for start, stop, step, d in cases:
        same(xp.arange(start, stop, step, dtype=d), np.arange(start, stop, step, dtype=d))
    for start, stop, d in [(2**63 - 2, 2**63 + 2, "int64"), (-1, 3, "uint64")]:
        with pytest.raises(OverflowError):
            xp.arange(start, stop, dtype=d)


@pytestmark_i64
@pytest.mark.parametrize("narrow", ["int8", "int16", "int32"])
def test_narrow_signed_operands_widen_exactly(narrow):
    # A narrower signed operand widened to int64 inside a kernel, fed to every 64-bit helper
    # that compares with constants (lavapipe once got these wrong for i64(x) widening).
    n = np.array([-7, 7, -3, 0, 5, -128 if narrow == "int8" else -300], narrow)
    w = np.array([2, 2, -3, 3, -2, 5], np.int64)
    xn, xw = xp.asarray(n), xp.asarray(w)
    with np.errstate(all="ignore"):
        same(xn // xw, n // w)
        same(xn % xw, n % w)
        same(xw // xn, np.where(n == 0, 0, w // np.where(n == 0, 1, n)))
        same(xw % xn, np.where(n == 0, 0, w % np.where(n == 0, 1, n)))
    s = np.array([1, 2, 63, 70, 0, 3], narrow)
    same(xw << xp.asarray(s), np.where(s >= 64, 0, w << np.minimum(s, 63).astype(np.int64)))
    same(xw >> xp.asarray(s), w >> np.minimum(s, 63).astype(np.int64))
    same(xp.sign(xp.astype(xn, "int64")), np.sign(n.astype(np.int64)))
    same(xp.abs(xp.astype(xn, "int64")), np.abs(n.astype(np.int64)))
    same(xp.maximum(xn, xw), np.maximum(n, w))
    same(xn < xw, n < w)
    p = np.array([0, 1, 2, 3, 1, 2], narrow)
    same(xw ** xp.asarray(p), w ** p.astype(np.int64))
    u = np.array([4000000000, 4000000001, 7, 0, 2**32 - 1, 5], np.uint32)
    with np.errstate(all="ignore"):
        same(xp.asarray(u) // xn, np.where(n == 0, 0, u.astype(np.int64) // np.where(n == 0, 1, n)))
        same(xp.asarray(u) % xn, np.where(n == 0, 0, u.astype(np.int64) % np.where(n == 0, 1, n)))


@pytestmark_i64
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_reductions(dtype):
    a = values(6, (4, 6), dtype)
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        same(xp.sum(x), np.sum(a))
        same(xp.sum(x, axis=1), np.sum(a, axis=1))
        same(xp.prod(x, axis=0), np.prod(a, axis=0))
        same(xp.max(x), np.max(a))
        same(xp.min(x[::2], axis=1), np.min(a[::2], axis=1))
        assert int(xp.argmax(x)) == int(np.argmax(a))
        assert int(xp.argmin(x)) == int(np.argmin(a))
    same(xp.any(x, axis=0), np.any(a, axis=0))
    same(xp.all(x), np.all(a))
    if HAS_F64:
        m = xp.mean(x)
        assert m.dtype == xp.float64
        np.testing.assert_allclose(float(m), np.mean(a.astype(np.float64)), rtol=1e-12)


@pytestmark_i64
def test_what_int64_does_not_take_yet_is_a_type_error():
    x = xp.asarray(values(7, (9,)))
    # matmul computes in int64 (test_numpy_linalg_wide.py).
    for f in (xp.fft.fft,):
        with pytest.raises(TypeError):
            f(x)
