"""matmul (``@``, ``tensordot``, ``einsum``, ``vecdot``) on float64 and the integer dtypes,
computed in the dtype itself (integers wrapping as NumPy's), and float64 ``solve``, ``inv``,
``det``, ``slogdet`` and ``cholesky``, against NumPy on seeded inputs: ragged, empty and
broadcast batch shapes, 1-D operands, transposed views."""

import numpy as np
import pytest

import suanli.numpy as xp

DT = xp.__array_namespace_info__().dtypes()
HAS_F64 = "float64" in DT
HAS_I64 = "int64" in DT
pytestmark = pytest.mark.skipif(not HAS_F64, reason="the device has no float64")

SHAPES = [((3, 5), (5, 4)), ((2, 1, 3, 7), (4, 7, 2)), ((0, 3), (3, 2)), ((3, 0), (0, 2)),
          ((5,), (5, 3)), ((2, 3, 4), (4,)), ((6,), (6,))]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_float64_matmul(sa, sb):
    rng = np.random.default_rng(sum(sa) + 7 * sum(sb))
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    got = np.asarray(xp.asarray(a) @ xp.asarray(b))
    want = a @ b
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    if a.ndim >= 2 and b.ndim >= 2:
        t = np.asarray(xp.matrix_transpose(xp.asarray(np.swapaxes(b, -1, -2).copy()))
                       .__rmatmul__(xp.asarray(a)))
        np.testing.assert_allclose(t, want, rtol=1e-13, atol=1e-13)


@pytest.mark.skipif(not HAS_I64, reason="the device has no int64")
@pytest.mark.parametrize("dtype", ["int64", "uint64", "int32", "uint8", "int16"])
def test_integer_matmul_wraps(dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (2, 3, 9), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, (9, 4), dtype=dtype, endpoint=True)
    with np.errstate(over="ignore"):
        want = np.matmul(a, b)
    got = np.asarray(xp.asarray(a) @ xp.asarray(b))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    got = np.asarray(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=1))
    np.testing.assert_array_equal(got, np.tensordot(a, b, axes=1))


def test_float64_tensordot_einsum_vecdot():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5, 2))
    x, y = xp.asarray(a), xp.asarray(b)
    np.testing.assert_allclose(np.asarray(xp.tensordot(x, y, axes=2)), np.tensordot(a, b, axes=2), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(xp.einsum("ijk,jkl->il", x, y)), np.einsum("ijk,jkl->il", a, b), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(xp.vecdot(x, x)), np.sum(a * a, axis=-1), rtol=1e-13)


@pytest.mark.parametrize("batch,n", [((), 5), ((2, 3), 4), ((0,), 3), ((2,), 0)])
def test_float64_solvers(batch, n):
    rng = np.random.default_rng(n + len(batch))
    a = rng.standard_normal(batch + (n, n))
    b = rng.standard_normal(batch + (n, 2))
    x = xp.asarray(a)
    got = np.asarray(xp.linalg.solve(x, xp.asarray(b)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.linalg.solve(a, b), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(xp.linalg.inv(x)), np.linalg.inv(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(xp.linalg.det(x)), np.linalg.det(a), rtol=1e-11, atol=1e-12)
    s, l = xp.linalg.slogdet(x)
    ws, wl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(np.asarray(s), ws)
    np.testing.assert_allclose(np.asarray(l), wl, rtol=1e-11, atol=1e-12)
    spd = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    np.testing.assert_allclose(np.asarray(xp.linalg.cholesky(xp.asarray(spd))), np.linalg.cholesky(spd), rtol=1e-11, atol=1e-12)


def test_float64_singular_is_linalg_error():
    a = xp.asarray(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(xp.linalg.LinAlgError):
        xp.linalg.solve(a, xp.asarray(np.ones(2)))
    assert float(xp.linalg.det(a)) == 0.0
    with pytest.raises(xp.linalg.LinAlgError):
        xp.linalg.cholesky(xp.asarray(np.array([[1.0, 2.0], [2.0, 1.0]])))


INF = np.inf
# Ties in the pivot column (the first is taken), -0.0 entries, ∞ entries, singular matrices
# after an odd number of swaps or with ∞ above the zero pivot, and diagonals whose partial
# products leave the dtype's range while the determinant does not.
SPECIAL = [
    [[1.0, 2.0], [1.0, 3.0]],
    [[-1.0, 2.0], [1.0, 3.0]],
    [[2.0, 1.0, 0.0], [-2.0, 3.0, 1.0], [2.0, 0.0, 5.0]],
    [[-0.0, 1.0], [1.0, -0.0]],
    [[1.0, -0.0], [-0.0, -2.0]],
    [[INF, 0.0], [0.0, 1.0]],
    [[-INF, 0.0], [0.0, 2.0]],
    [[0.0, INF], [0.0, 1.0]],
    [[1.0, 2.0], [2.0, 4.0]],
    [[0.0, 0.0], [0.0, 0.0]],
    [[-0.0, 1.0], [-0.0, 3.0]],
]
WIDE = {
    "float64": SPECIAL + [np.diag([1e-200, 1e-200, 1e300]).tolist(), np.diag([1e200, 1e200, 1e-300]).tolist()],
    "float32": SPECIAL + [np.diag([1e-20, 1e-20, 1e30]).tolist(), np.diag([1e20, 1e20, 1e-30]).tolist()],
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_det_slogdet_special_values_as_numpy(dtype):
    rtol = 1e-12 if dtype == "float64" else 2e-5
    for m in WIDE[dtype]:
        a = np.array(m, dtype=dtype)
        x = xp.asarray(a)
        with np.errstate(invalid="ignore"):
            want = np.linalg.det(a)
            ws, wl = np.linalg.slogdet(a)
        got = np.asarray(xp.linalg.det(x))
        assert got.dtype == want.dtype, m
        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=str(m))
        assert np.signbit(got) == np.signbit(want), (m, got, want)
        s, l = xp.linalg.slogdet(x)
        s, l = np.asarray(s), np.asarray(l)
        np.testing.assert_array_equal(s, ws, err_msg=str(m))
        assert np.signbit(s) == np.signbit(ws), (m, s, ws)
        np.testing.assert_allclose(l, wl, rtol=rtol, atol=rtol, err_msg=str(m))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "bool"])
@pytest.mark.parametrize("k", [1, 258, 259, 1024, 1025])
def test_narrow_integer_matmul_at_the_limits(dtype, k):
    info = np.iinfo(dtype) if dtype != "bool" else None
    rng = np.random.default_rng(k)
    if info is None:
        a = rng.integers(0, 2, (3, k)).astype(bool)
        b = rng.integers(0, 2, (k, 2)).astype(np.int8)
    else:
        a = rng.choice(np.array([info.min, info.max, info.min + 1], dtype=dtype), (3, k))
        b = rng.choice(np.array([info.min, info.max, 1], dtype=dtype), (k, 2))
    with np.errstate(over="ignore"):
        want = a @ b
    got = np.asarray(xp.asarray(a) @ xp.asarray(b))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
