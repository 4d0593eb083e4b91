"""``suanli.numpy.fft`` and complex64 arrays against NumPy (``numpy.fft`` computes in
float64): every transform on seeded inputs over lengths that take the radix-2 and the
Bluestein paths, every axis, ``n``/``s`` truncating and padding, every ``norm``,
non-contiguous input, the frequency helpers and shifts; complex64 arithmetic, casts and
conversions; and the exceptions NumPy users expect."""

import numpy as np
import pytest

import suanli.numpy as xp

LENGTHS = [1, 2, 3, 5, 7, 8, 12, 64, 100, 1000, 1024, 4096]


def cvalues(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def close(got, want, tol=None):
    """Max error relative to the largest magnitude of the f64 reference."""
    got = np.asarray(got)
    n = max(want.shape) if want.ndim else 1
    tol = tol if tol is not None else 3e-7 * (np.log2(max(n, 2)) + 4)
    scale = max(np.abs(want).max(initial=0.0), 1e-30)
    err = np.abs(got.astype(np.complex128) - want).max(initial=0.0)
    assert err <= tol * scale, (err, scale)


@pytest.mark.parametrize("n", LENGTHS)
def test_fft_ifft_every_length(n):
    rng = np.random.default_rng(n)
    a = cvalues(rng, (3, n))
    x = xp.asarray(a)
    y = xp.fft.fft(x)
    assert y.dtype == xp.complex64 and y.shape == (3, n)
    close(y, np.fft.fft(a.astype(np.complex128)))
    close(xp.fft.ifft(x), np.fft.ifft(a.astype(np.complex128)))
    close(xp.fft.ifft(y), a.astype(np.complex128))


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward", None])
def test_axes_norms_and_views(norm):
    rng = np.random.default_rng(1)
    a = cvalues(rng, (4, 6, 5))
    x = xp.asarray(a)
    ref = a.astype(np.complex128)
    for axis in (0, 1, 2, -1):
        close(xp.fft.fft(x, axis=axis, norm=norm), np.fft.fft(ref, axis=axis, norm=norm))
        close(xp.fft.ifft(x, axis=axis, norm=norm), np.fft.ifft(ref, axis=axis, norm=norm))
    v = x[::-2, 1].mT  # a strided, transposed view
    close(xp.fft.fft(v, axis=0, norm=norm), np.fft.fft(ref[::-2, 1].T, axis=0, norm=norm))


def test_n_truncates_and_pads():
    rng = np.random.default_rng(2)
    a = cvalues(rng, (2, 10))
    for n in (1, 4, 7, 10, 16, 25):
        close(xp.fft.fft(xp.asarray(a), n=n), np.fft.fft(a.astype(np.complex128), n=n))
        close(xp.fft.ifft(xp.asarray(a), n, 0), np.fft.ifft(a.astype(np.complex128), n, 0))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 12, 100, 1024])
def test_real_transforms(n):
    rng = np.random.default_rng(n + 10)
    r = rng.standard_normal((3, n)).astype(np.float32)
    x = xp.asarray(r)
    ref = r.astype(np.float64)
    close(xp.fft.fft(x), np.fft.fft(ref))
    X = xp.fft.rfft(x)
    assert X.shape == (3, n // 2 + 1) and X.dtype == xp.complex64
    close(X, np.fft.rfft(ref))
    back = xp.fft.irfft(X, n=n)
    assert back.dtype == xp.float32
    close(back, ref)
    c = cvalues(rng, (3, n // 2 + 1))
    for m in {n, 2 * max(n // 2, 1), n + 1}:
        close(xp.fft.irfft(xp.asarray(c), n=m), np.fft.irfft(c.astype(np.complex128), n=m))
        close(xp.fft.hfft(xp.asarray(c), n=m), np.fft.hfft(c.astype(np.complex128), n=m))
    close(xp.fft.ihfft(x), np.fft.ihfft(ref))
    for norm in ("ortho", "forward"):
        close(xp.fft.rfft(x, norm=norm), np.fft.rfft(ref, norm=norm))
        hn = max(2 * (c.shape[-1] - 1), 1)  # the default n, but 1 for a single value
        close(xp.fft.hfft(xp.asarray(c), hn, norm=norm), np.fft.hfft(c.astype(np.complex128), hn, norm=norm))
        close(xp.fft.ihfft(x, norm=norm), np.fft.ihfft(ref, norm=norm))


def test_nd_transforms():
    rng = np.random.default_rng(3)
    a = cvalues(rng, (3, 4, 6))
    r = rng.standard_normal((5, 4, 6)).astype(np.float32)
    x, xr = xp.asarray(a), xp.asarray(r)
    ca, rr = a.astype(np.complex128), r.astype(np.float64)
    close(xp.fft.fftn(x), np.fft.fftn(ca))
    close(xp.fft.ifftn(x, norm="ortho"), np.fft.ifftn(ca, norm="ortho"))
    close(xp.fft.fftn(x, s=(5, 3), axes=(0, 2)), np.fft.fftn(ca, s=(5, 3), axes=(0, 2)))
    close(xp.fft.fftn(x, s=(2, 8), axes=(1, 2)), np.fft.fftn(ca, s=(2, 8), axes=(1, 2)))
    close(xp.fft.fft2(x), np.fft.fft2(ca))
    close(xp.fft.ifft2(x), np.fft.ifft2(ca))
    close(xp.fft.rfftn(xr), np.fft.rfftn(rr))
    close(xp.fft.rfft2(xr), np.fft.rfft2(rr))
    close(xp.fft.rfftn(xr, axes=(0, 1)), np.fft.rfftn(rr, axes=(0, 1)))
    R = np.fft.rfftn(rr)
    close(xp.fft.irfftn(xp.asarray(R.astype(np.complex64)), s=rr.shape), rr)
    close(xp.fft.irfft2(xp.asarray(R[0].astype(np.complex64))),
          np.fft.irfft2(R[0].astype(np.complex64).astype(np.complex128)))


def test_helpers():
    for n in (1, 2, 7, 8):
        for d in (1.0, 0.25):
            np.testing.assert_allclose(np.asarray(xp.fft.fftfreq(n, d=d)), np.fft.fftfreq(n, d=d), rtol=1e-7)
            np.testing.assert_allclose(np.asarray(xp.fft.rfftfreq(n, d=d)), np.fft.rfftfreq(n, d=d), rtol=1e-7)
    assert xp.fft.fftfreq(4).dtype == xp.float32
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    for axes in (None, 0, 1, (0, 1), (1,)):
        np.testing.assert_array_equal(np.asarray(xp.fft.fftshift(xp.asarray(a), axes=axes)), np.fft.fftshift(a, axes=axes))
        np.testing.assert_array_equal(np.asarray(xp.fft.ifftshift(xp.asarray(a), axes=axes)), np.fft.ifftshift(a, axes=axes))
    with pytest.raises(ValueError):
        xp.fft.fftfreq(0)
    with pytest.raises(TypeError):
        xp.fft.fftfreq(4, dtype=xp.int32)


def test_fft_errors():
    x = xp.asarray(np.ones(4, np.complex64))
    with pytest.raises(ValueError):
        xp.fft.fft(x, n=0)
    with pytest.raises(ValueError):
        xp.fft.fft(x, norm="sideways")
    with pytest.raises(IndexError):
        xp.fft.fft(x, axis=1)
    with pytest.raises(TypeError):
        xp.fft.rfft(x)
    with pytest.raises(ValueError):
        xp.fft.fft(xp.asarray(np.complex64(1)))
    with pytest.raises(ValueError):
        xp.fft.irfft(xp.asarray(np.ones(1, np.complex64)))


def test_complex64_arrays():
    rng = np.random.default_rng(4)
    a, b = cvalues(rng, (4, 6)), cvalues(rng, (6,))
    x, y = xp.asarray(a), xp.asarray(b)
    assert x.dtype == xp.complex64 == np.complex64
    np.testing.assert_array_equal(np.asarray(x), a)
    ca, cb = a.astype(np.complex128), b.astype(np.complex128)
    for op in ("add", "subtract", "multiply", "divide"):
        got = getattr(xp, op)(x, y)
        assert got.dtype == xp.complex64
        np.testing.assert_allclose(np.asarray(got), getattr(np, op)(ca, cb), rtol=1e-6)
    f = rng.standard_normal(6).astype(np.float32)
    np.testing.assert_allclose(np.asarray(x * xp.asarray(f)), ca * f, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x + 2j), ca + 2j, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(1.5 / x), 1.5 / ca, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xp.asarray(f) * (1 - 1j)), f * (1 - 1j), rtol=1e-6)
    for name in ("negative", "positive", "conj", "square", "sqrt", "exp"):
        np.testing.assert_allclose(np.asarray(getattr(xp, name)(x)), getattr(np, name)(ca), rtol=2e-6)
    for name in ("real", "imag", "abs"):
        got = getattr(xp, name)(x)
        assert got.dtype == xp.float32
        np.testing.assert_allclose(np.asarray(got), getattr(np, name)(ca), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(x == x), np.ones((4, 6), bool))
    np.testing.assert_array_equal(np.asarray(x != xp.conj(x)), a.imag != 0)
    np.testing.assert_allclose(np.asarray(xp.sum(x, axis=0)), ca.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(complex(xp.mean(x)), ca.mean(), rtol=1e-5)
    assert complex(x[1, 2]) == complex(a[1, 2])
    with pytest.raises(TypeError):
        float(x[1, 2])
    # views, copies, concat, where, full
    np.testing.assert_array_equal(np.asarray(x.T[::2]), a.T[::2])
    np.testing.assert_array_equal(np.asarray(xp.reshape(x, (3, 8))), a.reshape(3, 8))
    np.testing.assert_array_equal(np.asarray(xp.concat([x, x[:1]])), np.concatenate([a, a[:1]]))
    np.testing.assert_array_equal(np.asarray(xp.where(xp.asarray(a.real > 0), x, 0.0)), np.where(a.real > 0, a, 0))
    np.testing.assert_array_equal(np.asarray(xp.full((2,), 1 - 2j)), np.full(2, 1 - 2j, np.complex64))
    assert xp.asarray([1 + 1j, 2]).dtype == xp.complex64
    z = xp.zeros((3,), dtype=xp.complex64)
    z[1] = 3 - 1j
    np.testing.assert_array_equal(np.asarray(z), np.array([0, 3 - 1j, 0], np.complex64))
    # casts: real to complex, complex to real refused
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray(f), xp.complex64)), f.astype(np.complex64))
    with pytest.raises(TypeError):
        xp.astype(x, xp.float32)
    with pytest.raises(TypeError):
        xp.asarray(a.astype(np.complex128))
    np.testing.assert_array_equal(np.asarray(xp.asarray(a.astype(np.complex128), dtype=xp.complex64)), a)
    # promotion and inspection
    assert xp.result_type(xp.float32, xp.complex64) == xp.complex64
    assert xp.result_type(xp.int32, xp.complex64) == xp.complex64
    assert xp.isdtype(xp.complex64, "complex floating") and xp.isdtype(xp.complex64, "numeric")
    assert "complex64" in xp.__array_namespace_info__().dtypes()
    assert xp.__array_namespace_info__().dtypes(kind="complex floating") == {"complex64": xp.complex64}
    assert xp.finfo(xp.complex64).dtype == xp.float32
    # every operation without a complex form refuses complex with TypeError, never a wrong
    # answer (the complex functions, prod, the scans and matmul: test_numpy_complex.py)
    for bad in (lambda: x < x, lambda: xp.maximum(x, x),
                lambda: xp.max(x), lambda: xp.floor(x), lambda: x // x,
                lambda: xp.signbit(x), lambda: xp.atan2(x, x)):
        with pytest.raises(TypeError, match="complex64"):
            bad()
