"""``suanli.numpy.linalg``'s solvers and factorisations against ``numpy.linalg`` (in float64):
random well-conditioned matrices of ragged orders, batches that broadcast, vector and matrix
right-hand sides, views, singular and indefinite matrices (``LinAlgError``), wrong shapes,
empty batches. Tolerances follow from the order and the condition number."""

import numpy as np
import pytest

import suanli.numpy as xp

EPS = float(np.finfo(np.float32).eps)
ORDERS = [1, 2, 3, 17, 64, 130]


def matrices(rng, batch, n):
    """P + R/(2√n) in float32: P a random permutation (rows must be swapped), κ₂ ≲ 4."""
    r = rng.uniform(-1, 1, batch + (n, n)) / (2 * np.sqrt(n))
    for idx in np.ndindex(*batch):
        r[idx][np.arange(n), rng.permutation(n)] += 1.0
    return r.astype(np.float32)


def tol(a64):
    n = a64.shape[-1]
    return 4 * n * EPS * float(np.max(np.linalg.cond(a64, 1))) if a64.size else 0.0


def rel(got, want):
    scale = max(float(np.max(np.abs(want))), 1e-30) if want.size else 1.0
    return float(np.max(np.abs(np.asarray(got, np.float64) - want))) / scale if want.size else 0.0


@pytest.mark.parametrize("n", ORDERS)
def test_solve_inv_det_slogdet_match_numpy(n, rng):
    batch = (2,) if n > 64 else (2, 3)
    a = matrices(rng, batch, n)
    a64 = a.astype(np.float64)
    t = tol(a64)
    b = rng.uniform(-1, 1, batch + (n, 4)).astype(np.float32)
    x = xp.linalg.solve(xp.asarray(a), xp.asarray(b))
    assert x.shape == batch + (n, 4) and x.dtype == xp.float32
    assert rel(np.asarray(x), np.linalg.solve(a64, b.astype(np.float64))) <= t
    v = rng.uniform(-1, 1, n).astype(np.float32)
    xv = np.asarray(xp.linalg.solve(xp.asarray(a), xp.asarray(v)))
    want = np.linalg.solve(a64, np.broadcast_to(v.astype(np.float64)[:, None], batch + (n, 1)))[..., 0]
    assert xv.shape == batch + (n,) and rel(xv, want) <= t
    assert rel(np.asarray(xp.linalg.inv(xp.asarray(a))), np.linalg.inv(a64)) <= t
    det = np.asarray(xp.linalg.det(xp.asarray(a)))
    assert det.shape == batch and rel(det, np.linalg.det(a64)) <= t
    s, l = xp.linalg.slogdet(xp.asarray(a))
    ws, wl = np.linalg.slogdet(a64)
    np.testing.assert_array_equal(np.asarray(s), ws)
    np.testing.assert_allclose(np.asarray(l), wl, atol=t)


@pytest.mark.parametrize("n", ORDERS)
def test_cholesky_matches_numpy(n, rng):
    m = rng.uniform(-1, 1, (2, n, n))
    a = (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(np.float32)
    a64 = a.astype(np.float64)
    t = tol(a64) ** 0.5 if n > 1 else 1e-6
    want = np.linalg.cholesky(a64)
    lo = np.asarray(xp.linalg.cholesky(xp.asarray(a)))
    assert lo.dtype == np.float32 and rel(lo, want) <= max(t, 20 * n * EPS)
    up = np.asarray(xp.linalg.cholesky(xp.asarray(a), upper=True))
    np.testing.assert_array_equal(up, np.swapaxes(lo, -1, -2))
    # Only the lower triangle is read, as NumPy reads it.
    poisoned = a.copy()
    poisoned[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = np.nan
    np.testing.assert_array_equal(np.asarray(xp.linalg.cholesky(xp.asarray(poisoned))), lo)


def test_broadcasting_views_and_matrix_power(rng):
    a = matrices(rng, (2, 1), 5)
    b = rng.uniform(-1, 1, (3, 5, 2)).astype(np.float32)
    got = np.asarray(xp.linalg.solve(xp.asarray(a), xp.asarray(b)))
    want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == (2, 3, 5, 2) and rel(got, want) <= 1e-4
    # A transposed view and a strided right-hand side are read as they are.
    a = matrices(rng, (), 6)
    w = rng.uniform(-1, 1, (6, 6)).astype(np.float32)
    got = np.asarray(xp.linalg.solve(xp.asarray(a).mT, xp.asarray(w)[:, ::2]))
    assert rel(got, np.linalg.solve(a.T.astype(np.float64), w[:, ::2].astype(np.float64))) <= 1e-4
    got = np.asarray(xp.linalg.matrix_power(xp.asarray(a), -3))
    assert rel(got, np.linalg.matrix_power(np.linalg.inv(a.astype(np.float64)), 3)) <= 1e-4
    # Integer matrices are solved in float32.
    x = xp.linalg.solve(xp.asarray(np.array([[2, 1], [1, 3]], np.int32)), xp.asarray(np.array([1, 2], np.int32)))
    assert x.dtype == xp.float32
    np.testing.assert_allclose(np.asarray(x), [0.2, 0.6], rtol=1e-6)


def test_singular_indefinite_and_misshapen_inputs():
    sing = xp.asarray(np.array([[[1, 2], [2, 4]], [[2, 0], [0, 2]]], np.float32))
    with pytest.raises(xp.linalg.LinAlgError):
        xp.linalg.solve(sing, xp.ones(2))
    with pytest.raises(xp.linalg.LinAlgError):
        xp.linalg.inv(sing)
    with pytest.raises(xp.linalg.LinAlgError):
        xp.linalg.matrix_power(sing, -1)
    np.testing.assert_array_equal(np.asarray(xp.linalg.det(sing)), [0.0, 4.0])
    s, l = xp.linalg.slogdet(sing)
    np.testing.assert_array_equal(np.asarray(s), [0.0, 1.0])
    assert np.asarray(l)[0] == -np.inf
    with pytest.raises(xp.linalg.LinAlgError):
        xp.linalg.cholesky(xp.asarray(np.array([[1, 2], [2, 1]], np.float32)))
    assert issubclass(xp.linalg.LinAlgError, ValueError)
    for f in (xp.linalg.inv, xp.linalg.det, xp.linalg.slogdet, xp.linalg.cholesky):
        with pytest.raises(xp.linalg.LinAlgError):
            f(xp.ones((2, 3)))
        with pytest.raises(xp.linalg.LinAlgError):
            f(xp.ones(3))
    with pytest.raises(ValueError):
        xp.linalg.solve(xp.eye(3), xp.ones(2))
    with pytest.raises(TypeError):
        xp.linalg.inv(xp.asarray(np.eye(2, dtype=bool)))
    e = xp.zeros((2, 0, 0))
    np.testing.assert_array_equal(np.asarray(xp.linalg.det(e)), [1.0, 1.0])
    assert xp.linalg.inv(e).shape == (2, 0, 0)
    assert xp.linalg.solve(xp.zeros((0, 4, 4)), xp.ones((4, 1))).shape == (0, 4, 1)


@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (2, 3), (17, 5), (5, 17), (64, 64), (130, 17)])
def test_svd_svdvals_pinv_rank_and_norms_match_numpy(shape, rng):
    m, n = shape
    a = rng.uniform(-1, 1, (2,) + shape).astype(np.float32)
    a64 = a.astype(np.float64)
    k = min(m, n)
    t = 30 * max(m, n) * EPS
    u, s, vh = xp.linalg.svd(xp.asarray(a), full_matrices=False)
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    assert u.shape == (2, m, k) and s.shape == (2, k) and vh.shape == (2, k, n)
    ws = np.linalg.svd(a64, compute_uv=False)
    smax = ws[..., :1]
    assert np.all(np.abs(s - ws) <= t * smax)
    assert np.all(np.abs(np.asarray(xp.linalg.svdvals(xp.asarray(a))) - ws) <= t * smax)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a64, atol=t * float(smax.max()))
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(k), (2, k, k)), atol=t)
    np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), np.broadcast_to(np.eye(k), (2, k, k)), atol=t)
    cond = float(np.max(ws[..., 0] / ws[..., -1]))
    np.testing.assert_allclose(np.asarray(xp.linalg.pinv(xp.asarray(a))), np.linalg.pinv(a64),
                               atol=10 * t * cond / float(np.min(ws[..., -1])))
    np.testing.assert_array_equal(np.asarray(xp.linalg.matrix_rank(xp.asarray(a))), np.linalg.matrix_rank(a64))
    for ord_ in (2, -2, "nuc"):
        got = np.asarray(xp.linalg.matrix_norm(xp.asarray(a), ord=ord_))
        np.testing.assert_allclose(got, np.linalg.norm(a64, ord=ord_, axis=(-2, -1)), rtol=t * cond)
    # full_matrices: U and Vh square and orthonormal, the same S, the same reconstruction.
    uf, sf, vhf = (np.asarray(v) for v in xp.linalg.svd(xp.asarray(a)))
    assert uf.shape == (2, m, m) and vhf.shape == (2, n, n)
    np.testing.assert_array_equal(sf, s)
    np.testing.assert_allclose(np.swapaxes(uf, -1, -2) @ uf, np.broadcast_to(np.eye(m), (2, m, m)), atol=t)
    np.testing.assert_allclose(vhf @ np.swapaxes(vhf, -1, -2), np.broadcast_to(np.eye(n), (2, n, n)), atol=t)
    np.testing.assert_allclose((uf[..., :, :k] * s[..., None, :]) @ vhf[..., :k, :], a64, atol=t * float(smax.max()))


@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (2, 3), (17, 5), (5, 17), (64, 64), (130, 17)])
def test_qr_matches_numpy(shape, rng):
    m, n = shape
    a = rng.uniform(-1, 1, (2,) + shape).astype(np.float32)
    a64 = a.astype(np.float64)
    t = 30 * max(m, n) * EPS
    for mode in ("reduced", "complete"):
        q, r = (np.asarray(v) for v in xp.linalg.qr(xp.asarray(a), mode=mode))
        wq, wr = np.linalg.qr(a64, mode=mode)
        assert q.shape == wq.shape and r.shape == wr.shape
        np.testing.assert_array_equal(np.triu(r), r)
        np.testing.assert_allclose(q @ r, a64, atol=t)
        c = q.shape[-1]
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(c), (2, c, c)), atol=t)
        # LAPACK's signs: the same R as NumPy's, row by row, where its diagonal is nonzero.
        k = min(m, n)
        np.testing.assert_allclose(r[..., :k, :], wr[..., :k, :], atol=t * 10)
    with pytest.raises(ValueError):
        xp.linalg.qr(xp.asarray(a), mode="r")


def test_rank_deficiency():
    a = xp.asarray(np.array([[1, 2, 3], [2, 4, 6]], np.float32))
    assert int(xp.linalg.matrix_rank(a)) == 1
    np.testing.assert_allclose(np.asarray(xp.linalg.pinv(a)), np.linalg.pinv(np.asarray(a, np.float64)), atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 17, 64])
def test_eigh_eigvalsh_match_numpy(n, rng):
    r = rng.uniform(-1, 1, (2, n, n))
    a = ((r + np.swapaxes(r, -1, -2)) / 2).astype(np.float32)
    a64 = a.astype(np.float64)
    norm = float(np.max(np.abs(a64).sum(-1)))
    t = 30 * n * EPS * norm
    w, v = xp.linalg.eigh(xp.asarray(a))
    w, v = np.asarray(w), np.asarray(v)
    assert np.all(np.diff(w, axis=-1) >= 0)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a64), atol=t)
    np.testing.assert_array_equal(np.asarray(xp.linalg.eigvalsh(xp.asarray(a))), w)
    np.testing.assert_allclose(a64 @ v, v * w[..., None, :], atol=t)
    # Only the lower triangle is read.
    poisoned = a.copy()
    iu = np.triu_indices(n, 1)
    poisoned[:, iu[0], iu[1]] = np.nan
    np.testing.assert_array_equal(np.asarray(xp.linalg.eigvalsh(xp.asarray(poisoned))), w)
    with pytest.raises(xp.linalg.LinAlgError):
        xp.linalg.eigh(xp.ones((2, 3)))


def test_norm_matches_numpy_for_every_axis_and_ord(rng):
    a = rng.uniform(-2, 2, (3, 4, 5)).astype(np.float32)
    a64 = a.astype(np.float64)
    x = xp.asarray(a)
    t = 100 * EPS

    def check(got, want):
        got = np.asarray(got)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=t, atol=t)

    for keepdims in (False, True):
        check(xp.linalg.norm(x, keepdims=keepdims), np.linalg.norm(a64, keepdims=keepdims))
        for axis in (0, -1, 1):
            for ord_ in (None, 1, 2, 3, 0, np.inf, -np.inf, 0.5):
                check(xp.linalg.norm(x, ord=ord_, axis=axis, keepdims=keepdims),
                      np.linalg.norm(a64, ord=ord_, axis=axis, keepdims=keepdims))
        for axis in ((0, 1), (2, 0), (-1, -2)):
            for ord_ in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
                check(xp.linalg.norm(x, ord=ord_, axis=axis, keepdims=keepdims),
                      np.linalg.norm(a64, ord=ord_, axis=axis, keepdims=keepdims))
    m, v = a[0], a[0, 0]
    for ord_ in (None, "fro", "nuc", 1, -1, 2, np.inf):
        check(xp.linalg.norm(xp.asarray(m), ord=ord_), np.linalg.norm(m.astype(np.float64), ord=ord_))
    for ord_ in (None, 1, 2, 3, np.inf):
        check(xp.linalg.norm(xp.asarray(v), ord=ord_), np.linalg.norm(v.astype(np.float64), ord=ord_))
    check(xp.linalg.norm([3.0, 4.0]), 5.0)
    for bad in (dict(ord=2), dict(axis=(0, 0)), dict(axis=3), dict(axis=(0, 1, 2)), dict(ord="fro", axis=0)):
        with pytest.raises(ValueError):
            xp.linalg.norm(x, **bad)
