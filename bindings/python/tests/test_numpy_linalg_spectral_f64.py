"""float64 ``svd``, ``svdvals``, ``eigh``, ``eigvalsh``, ``qr`` and what builds on them
(``pinv``, ``matrix_rank``, ``matrix_norm`` 2/-2/nuc) against NumPy (LAPACK in float64) on
seeded matrices: orders 1, 2, 3, 17, 64, a batch of three, tall and wide, singular values
spread over 1e-12..1, repeated eigenvalues (checked by A·V = V·Λ and VᵀV = I, the vectors
not being unique), int64 input whose low bits float32 loses, a graded matrix. No case is exact
in float32 (the 1×1 matrices are scaled by π).

Tolerance 1e-10 relative to ‖A‖: both sides are backward stable in float64, so they agree
to a small multiple of n·ε₆₄·‖A‖ (about 1e-14 at n = 64); a float32 step anywhere (ε₃₂ ≈
1.2e-7) misses by three orders of magnitude or more."""

import numpy as np
import pytest

import suanli.numpy as xp

DT = xp.__array_namespace_info__().dtypes()
pytestmark = pytest.mark.skipif("float64" not in DT, reason="the device has no float64")

TOL = 1e-10


def built(rng, shape, s):
    """Matrices U·diag(s)·Vᵀ of `shape` (..., m, n) with random orthonormal U and V."""
    *batch, m, n = shape
    k = len(s)
    u = np.linalg.qr(rng.standard_normal((*batch, m, k)))[0]
    v = np.linalg.qr(rng.standard_normal((*batch, n, k)))[0]
    return (u * s) @ np.swapaxes(v, -1, -2)


def close(got, want, scale, what):
    got = np.asarray(got)
    assert got.dtype == np.float64, what
    err = np.max(np.abs(got - want), initial=0.0)
    assert err <= TOL * max(scale, 1e-300), f"{what}: error {err:e}, scale {scale:e}"


SHAPES = [(1, 1), (2, 2), (3, 3), (17, 17), (64, 64), (3, 5, 4), (20, 7), (6, 19)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lo", [1.0, 1e-12])
def test_float64_svd_as_numpy(shape, lo):
    rng = np.random.default_rng(sum(shape))
    k = min(shape[-2:])
    a = built(rng, shape, np.geomspace(1.0, lo, k) * np.pi)
    x = xp.asarray(a)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    ws = np.linalg.svd(a, compute_uv=False)
    close(s, ws, np.pi, f"S {shape}")
    close(xp.linalg.svdvals(x), ws, np.pi, f"svdvals {shape}")
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    close((u * s[..., None, :]) @ vh, a, np.pi, f"U·S·Vh {shape}")
    eye = np.eye(k)
    close(np.swapaxes(u, -1, -2) @ u, eye, 1.0, f"UᵀU {shape}")
    close(vh @ np.swapaxes(vh, -1, -2), eye, 1.0, f"Vh·Vhᵀ {shape}")
    # full_matrices completes U or Vh by the float64 complete QR.
    fu, _, fvh = xp.linalg.svd(x)
    fu, fvh = np.asarray(fu), np.asarray(fvh)
    close(np.swapaxes(fu, -1, -2) @ fu, np.eye(shape[-2]), 1.0, f"full U {shape}")
    close(fvh @ np.swapaxes(fvh, -1, -2), np.eye(shape[-1]), 1.0, f"full Vh {shape}")


@pytest.mark.parametrize("n,batch,repeat", [(1, (), False), (2, (), True), (3, (), False),
                                            (17, (), True), (64, (), False), (6, (3,), True)])
def test_float64_eigh_as_numpy(n, batch, repeat):
    rng = np.random.default_rng(n)
    lam = rng.choice([-1.0, 2.0, 2.0, 0.5], n) if repeat else rng.standard_normal(n) * 3
    q = np.linalg.qr(rng.standard_normal(batch + (n, n)))[0]
    a = (q * lam) @ np.swapaxes(q, -1, -2)
    a = (a + np.swapaxes(a, -1, -2)) / 2
    poisoned = np.where(np.triu(np.ones((n, n)), 1) > 0, np.nan, a)  # only the lower triangle is read
    x = xp.asarray(poisoned)
    w, v = xp.linalg.eigh(x)
    ww = np.linalg.eigvalsh(a)
    scale = float(np.max(np.abs(lam)))
    close(w, ww, scale, f"w n={n}")
    close(xp.linalg.eigvalsh(x), ww, scale, f"eigvalsh n={n}")
    w, v = np.asarray(w), np.asarray(v)
    close(a @ v, v * w[..., None, :], scale, f"A·V n={n}")
    close(np.swapaxes(v, -1, -2) @ v, np.eye(n), 1.0, f"VᵀV n={n}")


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (17, 5), (3, 4, 9), (64, 64), (0, 3), (2, 0, 0)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_float64_qr_as_numpy(shape, mode):
    rng = np.random.default_rng(sum(shape) + 7)
    k = min(shape[-2:])
    a = built(rng, shape, np.geomspace(1.0, 1e-10, k) / 3) if k else np.zeros(shape)
    q, r = xp.linalg.qr(xp.asarray(a), mode=mode)
    wq, wr = np.linalg.qr(a, mode=mode)
    q, r = np.asarray(q), np.asarray(r)
    assert q.shape == wq.shape and r.shape == wr.shape, (q.shape, r.shape, wq.shape, wr.shape)
    close(q @ r, a, 1.0, f"Q·R {shape}")
    close(np.swapaxes(q, -1, -2) @ q, np.eye(q.shape[-1]), 1.0, f"QᵀQ {shape}")
    close(np.tril(r, -1), np.zeros_like(wr), 1.0, f"R triangular {shape}")
    # R as LAPACK's up to the sign of each row.
    close(np.abs(r), np.abs(wr), 1.0, f"|R| {shape}")


def test_float64_pinv_rank_and_norms_as_numpy():
    rng = np.random.default_rng(3)
    a = built(rng, (2, 9, 6), np.array([1.0, 0.5, 1e-3, 1e-9, 1e-15, 0.0]))
    x = xp.asarray(a)
    # Rank with float64's default rtol (max(m, n)·ε₆₄): 1e-9 counts, 1e-15 does not (NumPy
    # agrees); float32's ε would have dropped 1e-9 too.
    got = np.asarray(xp.linalg.matrix_rank(x))
    np.testing.assert_array_equal(got, np.linalg.matrix_rank(a))
    assert list(got) == [4, 4]
    p = np.asarray(xp.linalg.pinv(x))
    assert p.dtype == np.float64
    wp = np.linalg.pinv(a, rcond=9 * np.finfo(np.float64).eps)
    np.testing.assert_allclose(p, wp, rtol=1e-6, atol=1e-6 * np.max(np.abs(wp)))
    for ord in (2, -2, "nuc"):
        got = np.asarray(xp.linalg.matrix_norm(x, ord=ord))
        close(got, np.linalg.norm(a, ord=ord, axis=(-2, -1)), 1.0, f"matrix_norm {ord}")


def test_int64_spectral_in_float64():
    # Entries whose low bits float32 loses: in float32 both diagonal entries are 2^30, the
    # eigenvalues 2^30 ± 3 (off by ≥ 1, the gap 6 for 2√9.25); float64 errs by about
    # ε·2^31 ≈ 5e-7.
    b = 1 << 30
    i = np.array([[b + 1, 3], [3, b + 2]], dtype=np.int64)
    f = i.astype(np.float64)
    x = xp.asarray(i)
    w = np.asarray(xp.linalg.eigvalsh(x))
    assert w.dtype == np.float64
    r = np.sqrt(9.25)
    np.testing.assert_allclose(w, [b + 1.5 - r, b + 1.5 + r], rtol=0, atol=1e-3)
    assert abs((w[1] - w[0]) - 2 * r) <= 1e-5, w
    s = np.asarray(xp.linalg.svdvals(x))
    assert s.dtype == np.float64
    np.testing.assert_allclose(s, np.linalg.svd(f, compute_uv=False), rtol=0, atol=1e-3)
    q, rr = (np.asarray(t) for t in xp.linalg.qr(x))
    assert q.dtype == rr.dtype == np.float64
    np.testing.assert_allclose(q @ rr, f, rtol=0, atol=1e-3)
    np.testing.assert_allclose(np.abs(rr), np.abs(np.linalg.qr(f)[1]), rtol=0, atol=1e-3)
    # The 2-norm from svdvals: float32 would give 2^30 + 3.
    n2 = np.asarray(xp.linalg.matrix_norm(x, ord=2))
    assert abs(float(n2) - (b + 1.5 + r)) <= 1e-3, n2


def test_graded_svdvals_keep_relative_accuracy():
    # The small singular value of [[1, 1e-35], [0, 1e-35]] is 1e-35 (σ₁σ₂ = |det|, σ₁ = 1);
    # a rotation floor tied to ‖A‖ rather than to underflow gave √2·1e-35.
    a = np.array([[1.0, 1e-35], [0.0, 1e-35]])
    s = np.asarray(xp.linalg.svdvals(xp.asarray(a)))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12, atol=0)
