"""suanli.numpy's kernels of your own (CuPy's ElementwiseKernel, ReductionKernel, fuse)
against NumPy: broadcasting, scalars, views, placeholders, several outputs, reductions over
axes, one dispatch for a fused function, and NumPy's exceptions for bad use."""

import numpy as np
import pytest

import suanli
import suanli.numpy as xp


def rng(seed):
    return np.random.default_rng(seed)


def test_elementwise_kernel_broadcasts_scalars_and_views():
    k = xp.ElementwiseKernel("T x, T y, float32 s", "T z", "z = (x - y) * (x - y) * s", "squared_diff")
    a = rng(0).standard_normal((6, 5)).astype(np.float32)
    b = rng(1).standard_normal((5,)).astype(np.float32)
    xa = xp.asarray(a)
    got = k(xa[::2].T, xp.asarray(b)[:3], 0.5)  # a transposed strided view, broadcast row
    want = (a[::2].T - b[:3]) ** 2 * 0.5
    assert got.shape == want.shape and got.dtype == xp.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_elementwise_kernel_several_outputs_index_and_integer_types():
    k = xp.ElementwiseKernel("int16 x", "int16 y, uint32 pos, bool odd", "y = x * x; pos = i; odd = (x & 1i) != 0i", "sq16")
    v = rng(2).integers(-300, 300, size=(4, 7)).astype(np.int16)
    y, pos, odd = k(xp.asarray(v))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(np.asarray(y), v * v)  # wraps as NumPy's int16 does
    np.testing.assert_array_equal(np.asarray(pos), np.arange(28, dtype=np.uint32).reshape(4, 7))
    np.testing.assert_array_equal(np.asarray(odd), (v & 1) != 0)
    assert odd.dtype == xp.bool


def test_reduction_kernel_over_axes_matches_numpy():
    l2 = xp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    a = rng(3).standard_normal((3, 4, 300)).astype(np.float32)
    x = xp.asarray(a)
    for axis in (None, 0, 2, (0, 2), (-1, -2)):
        for keepdims in (False, True):
            got = l2(x, axis=axis, keepdims=keepdims)
            want = np.sqrt((a.astype(np.float64) ** 2).sum(axis=axis, keepdims=keepdims))
            assert got.shape == np.shape(want)
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6)


def test_reduction_kernel_with_reduce_type_and_two_inputs():
    dot = xp.ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dot")
    a = rng(4).standard_normal(5000).astype(np.float32)
    b = rng(5).standard_normal(5000).astype(np.float32)
    np.testing.assert_allclose(float(dot(xp.asarray(a), xp.asarray(b))), float(a.astype(np.float64) @ b), rtol=1e-5)
    count = xp.ReductionKernel("T x", "int32 y", "u32(x > 0.0)", "a + b", "y = i32(a)", "0", "count_pos", reduce_type="uint32")
    assert int(count(xp.asarray(a))) == int((a > 0).sum())
    empty = xp.zeros((3, 0), dtype=xp.float32)
    np.testing.assert_array_equal(np.asarray(dot(empty, empty, axis=1)), np.zeros(3, np.float32))


def test_fuse_is_one_dispatch_and_equals_numpy():
    @xp.fuse
    def f(x, y):
        return xp.exp(-(x * x)) * y + xp.sin(x) / (1.0 + y * y)

    a = rng(6).standard_normal(1000).astype(np.float32)
    b = rng(7).standard_normal(1000).astype(np.float32)
    x, y = xp.asarray(a), xp.asarray(b)
    x.get(), y.get()  # uploaded and settled before counting
    with suanli.profiler.profile(x.device) as prof:
        got = np.asarray(f(x, y))
    assert prof.dispatches == 1, prof.table()
    want = np.exp(-(a * a)) * b + np.sin(a) / (1.0 + b * b)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert f.__name__ == "f"


def test_bad_kernels_raise_numpy_exceptions():
    with pytest.raises(ValueError):
        xp.ElementwiseKernel("float32", "float32 y", "y = 1.0", "k")
    with pytest.raises(ValueError):
        xp.ElementwiseKernel("raw T x", "T y", "y = x", "k")
    k = xp.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add2")
    with pytest.raises(TypeError):
        k(xp.ones(3))
    with pytest.raises(ValueError):
        k(xp.ones(3), xp.ones(4))
    with pytest.raises(TypeError):
        k(xp.ones(3), xp.ones(3, dtype=xp.int32))
    broken = xp.ElementwiseKernel("T x", "T z", "z = x +* 1.0", "broken")
    with pytest.raises(ValueError, match="broken"):
        broken(xp.ones(3))
    with pytest.raises(ValueError):
        xp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", None, "noid")
    r = xp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "s")
    with pytest.raises(IndexError):
        r(xp.ones(3), axis=1)


def test_memory_pool_under_cupys_names():
    pool = xp.get_default_memory_pool()
    x = xp.ones((256, 256), dtype=xp.float32)
    x.get()
    used = pool.used_bytes()
    assert used >= 256 * 256 * 4
    del x
    assert pool.used_bytes() <= used - 256 * 256 * 4
    assert pool.free_bytes() > 0  # the freed buffer is cached for reuse
    pool.free_all_blocks()
    assert pool.free_bytes() == 0
    assert pool.get_limit() >= 0
