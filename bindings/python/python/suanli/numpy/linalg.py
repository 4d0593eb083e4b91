"""``suanli.numpy.linalg``: matrix products on the tuned matmul kernels (views read in
place), and what is built from products, views and reductions (``vecdot``, ``tensordot``,
``outer``, ``diagonal``, ``trace``, ``cross``, the vector and matrix norms that need no
decomposition, ``matrix_power``), and the solvers and factorisations on the device:
``solve``, ``inv``, ``det``, ``slogdet`` (LU with partial pivoting) and ``cholesky``, float32
(float64 for float64, int64 and uint64 input), batched over leading axes. ``matmul`` of
float64 and of integers computes in their dtype (integers wrapping, as NumPy's). A singular matrix (an exactly zero pivot) raises ``LinAlgError``
in ``solve`` and ``inv`` as NumPy's does. ``qr`` by Householder reflections; ``svd``,
``svdvals``, ``eigh``, ``eigvalsh`` by one-sided Jacobi on the device, and from them
``pinv``, ``matrix_rank`` and ``matrix_norm``'s 2-norms and nuclear norm; those too run in
float64 for float64, int64 and uint64 input (the float64 twins of the Householder and Jacobi
kernels) and in float32 otherwise. Every norm of int64 and uint64 (``vector_norm``,
``matrix_norm``, ``norm``) computes in float64 too, as NumPy's, where the device holds
float64, and in float32 on one with 64-bit integers but no float64."""

from __future__ import annotations

import builtins
import math
from typing import Any, NamedTuple, Optional, Tuple, Union

from .. import _native
from .._native import LinAlgError
from ._array import _operand, ndarray

__all__ = [
    "matmul", "matrix_transpose", "vecdot", "tensordot", "outer", "diagonal", "trace",
    "cross", "norm", "vector_norm", "matrix_norm", "matrix_power", "solve", "inv", "det", "slogdet",
    "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "pinv", "matrix_rank",
    "LinAlgError", "SlogdetResult", "QRResult", "SVDResult", "EighResult",
]


class QRResult(NamedTuple):
    """``qr``'s result: A = Q @ R."""

    Q: ndarray
    R: ndarray


class SVDResult(NamedTuple):
    """``svd``'s result: A = U @ diag(S) @ Vh."""

    U: ndarray
    S: ndarray
    Vh: ndarray


class EighResult(NamedTuple):
    """``eigh``'s result: ascending eigenvalues and the eigenvectors as columns."""

    eigenvalues: ndarray
    eigenvectors: ndarray


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: the sign and the natural log of the absolute determinant."""

    sign: ndarray
    logabsdet: ndarray


def _square(x: Any, name: str) -> ndarray:
    """``x`` as an array of square matrices, or NumPy's ``LinAlgError``."""
    x = _operand(x, None)
    if x.ndim < 2:
        raise LinAlgError(
            f"{name}: {x.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"{name}: last 2 dimensions of the array must be square, found shape {x.shape}")
    return x


def solve(x1: Any, x2: Any, /) -> ndarray:
    """X with ``x1 @ X == x2``: ``x2`` of shape ``(..., n, k)`` (batch axes broadcast) or
    ``(n,)`` (one vector), as the standard's ``linalg.solve``. LU with partial pivoting on the
    device; a singular matrix raises ``LinAlgError``."""
    a = _square(x1, "solve")
    b = _operand(x2, a)
    return ndarray(_native.array_solve(a._a, b._a))


def inv(x: Any, /) -> ndarray:
    """The inverse of each square matrix (``LinAlgError`` when one is singular)."""
    return ndarray(_native.array_inv(_square(x, "inv")._a))


def det(x: Any, /) -> ndarray:
    """The determinant of each square matrix (0 for a singular one)."""
    return ndarray(_native.array_det(_square(x, "det")._a))


def slogdet(x: Any, /) -> SlogdetResult:
    """(sign, log|det|) of each square matrix: (0, -inf) for a singular one."""
    s, l = _native.array_slogdet(_square(x, "slogdet")._a)
    return SlogdetResult(ndarray(s), ndarray(l))


def cholesky(x: Any, /, *, upper: bool = False) -> ndarray:
    """L with ``x = L @ L.mT`` from each matrix's lower triangle, or ``U = L.mT`` when
    ``upper``; ``LinAlgError`` when a matrix is not positive definite."""
    return ndarray(_native.array_cholesky(_square(x, "cholesky")._a, bool(upper)))


def _matrices(x: Any, name: str) -> ndarray:
    x = _operand(x, None)
    if x.ndim < 2:
        raise LinAlgError(
            f"{name}: {x.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    return x


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """Q and R with ``x = Q @ R`` by Householder reflections on the device: Q ``(..., m, k)``
    and R ``(..., k, n)``, k = min(m, n) (``mode='reduced'``), or Q ``(..., m, m)`` and R
    ``(..., m, n)`` (``'complete'``). R's diagonal may be negative, as LAPACK's."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', found {mode!r}")
    q, r = _native.array_qr(_matrices(x, "qr")._a, mode == "complete")
    return QRResult(ndarray(q), ndarray(r))


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """U, S (descending), Vh with ``x = U @ diag(S) @ Vh``, by one-sided Jacobi on the device.
    With ``full_matrices`` a non-square matrix's U (or Vh) is completed to a square
    orthonormal one by the complete QR of its reduced factor."""
    xp = _xp()
    x = _matrices(x, "svd")
    m, n = x.shape[-2], x.shape[-1]
    u, s, vh = (ndarray(a) for a in _native.array_svd(x._a))
    if full_matrices and m != n and builtins.min(m, n) > 0:
        if m > n:
            q = qr(u, mode="complete").Q
            u = xp.concat([u, q[..., :, n:]], axis=-1)
        else:
            q = qr(vh.mT, mode="complete").Q
            vh = xp.concat([vh, q[..., :, m:].mT], axis=-2)
    return SVDResult(u, s, vh)


def svdvals(x: Any, /) -> ndarray:
    """The singular values, descending."""
    return ndarray(_native.array_svd(_matrices(x, "svdvals")._a)[1])


def eigh(x: Any, /) -> EighResult:
    """The eigenvalues (ascending) and eigenvectors of symmetric matrices (the lower triangle
    is read, as NumPy's ``UPLO='L'``)."""
    w, v = _native.array_eigh(_square(x, "eigh")._a)
    return EighResult(ndarray(w), ndarray(v))


def eigvalsh(x: Any, /) -> ndarray:
    """The eigenvalues of symmetric matrices, ascending."""
    return ndarray(_native.array_eigh(_square(x, "eigvalsh")._a)[0])


def _rtol(x: ndarray, rtol: Any, s: ndarray) -> Any:
    if rtol is None:
        # The standard's default, max(m, n)·ε of the dtype the SVD ran in (s's: float32 or float64).
        return builtins.max(x.shape[-2], x.shape[-1]) * float(_xp().finfo(s.dtype).eps)
    return rtol if isinstance(rtol, ndarray) else float(rtol)


def pinv(x: Any, /, *, rtol: Any = None) -> ndarray:
    """The pseudo-inverse from the SVD: singular values at or below ``rtol`` times the
    largest count as zero (``rtol`` defaults to max(m, n)·ε)."""
    xp = _xp()
    x = _float(_matrices(x, "pinv"))
    m, n = x.shape[-2], x.shape[-1]
    if builtins.min(m, n) == 0:
        return xp.zeros(x.shape[:-2] + (n, m), dtype=x.dtype, device=x.device)
    u, s, vh = svd(x, full_matrices=False)
    r = _rtol(x, rtol, s)
    if isinstance(r, ndarray):
        r = r[..., None]
    cutoff = r * xp.max(s, axis=-1, keepdims=True)
    inv_s = xp.where(s > cutoff, 1.0 / xp.where(s > cutoff, s, 1.0), 0.0)
    return matmul(vh.mT * inv_s[..., None, :], u.mT)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> ndarray:
    """The number of singular values above ``rtol`` times the largest (int32)."""
    xp = _xp()
    x = _float(_matrices(x, "matrix_rank"))
    if builtins.min(x.shape[-2], x.shape[-1]) == 0:
        return xp.zeros(x.shape[:-2], dtype=xp.int32, device=x.device)
    s = svdvals(x)
    r = _rtol(x, rtol, s)
    if isinstance(r, ndarray):
        r = r[..., None]
    cutoff = r * xp.max(s, axis=-1, keepdims=True)
    return xp.astype(xp.sum(s > cutoff, axis=-1), xp.int32)


def _xp():
    from .. import numpy as xp

    return xp


def matmul(x1: Any, x2: Any, /) -> ndarray:
    """The matrix product with NumPy's broadcasting and 1-D rules (``x1 @ x2``)."""
    a = _operand(x1, x2 if isinstance(x2, ndarray) else None)
    b = _operand(x2, a)
    return ndarray(a._a.matmul(b._a))


def matrix_transpose(x: ndarray, /) -> ndarray:
    return x.mT


def _padded(shape: Tuple[int, ...], n: int) -> Tuple[int, ...]:
    return (1,) * (n - len(shape)) + tuple(shape)


def vecdot(x1: ndarray, x2: ndarray, /, *, axis: int = -1) -> ndarray:
    """Σ x1·x2 over ``axis`` (the other axes broadcast; the contracted one must not), in the
    operands' promoted dtype, as the standard's ``vecdot`` (``conj(x1)`` for complex)."""
    xp = _xp()
    x1 = _operand(x1, x2 if isinstance(x2, ndarray) else None)
    x2 = _operand(x2, x1)
    n = builtins.max(x1.ndim, x2.ndim)
    lo = builtins.min(x1.ndim, x2.ndim)
    a = int(axis) - n if axis >= 0 else int(axis)  # counted from the end
    if not -lo <= a < 0:
        raise IndexError(f"vecdot: axis {axis} is out of range for shapes {x1.shape} and {x2.shape}")
    s1, s2 = _padded(x1.shape, n), _padded(x2.shape, n)
    if s1[a] != s2[a]:
        raise ValueError(
            f"vecdot: the contracted axis differs ({s1[a]} and {s2[a]}; it does not broadcast) "
            f"for shapes {x1.shape} and {x2.shape}"
        )
    dt = xp.result_type(x1, x2)
    if dt.kind == "b":
        raise TypeError("vecdot: expected numeric dtypes, found bool")
    if dt.kind == "c":
        x1 = xp.conj(x1)  # the standard's Σ conj(x1)·x2
    if dt == xp.float16:
        # Products in float32, rounded once at the end, as matmul does (NumPy too): rounding
        # each float16 product would lose them (300·300 overflows binary16).
        x1, x2 = xp.astype(x1, xp.float32), xp.astype(x2, xp.float32)
        return xp.astype(xp.sum(xp.multiply(x1, x2), axis=a), dt)
    return xp.sum(xp.multiply(x1, x2), axis=a, dtype=dt)


def tensordot(x1: ndarray, x2: ndarray, /, *, axes: Any = 2) -> ndarray:
    """The contraction over ``axes`` (see ``suanli.numpy.tensordot``)."""
    return _xp().tensordot(x1, x2, axes=axes)


def outer(x1: ndarray, x2: ndarray, /) -> ndarray:
    """The outer product of two 1-D arrays."""
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: expected two 1-D arrays, found shapes {x1.shape} and {x2.shape}")
    return _xp().multiply(x1[:, None], x2[None, :])


def diagonal(x: ndarray, /, *, offset: int = 0) -> ndarray:
    """The ``offset``-th diagonal of the last two axes: a strided view of ``x`` made
    contiguous (copied only when it is not)."""
    xp = _xp()
    if x.ndim < 2:
        raise ValueError(f"diagonal: expected at least 2 axes, found shape {x.shape}")
    n, m = x.shape[-2], x.shape[-1]
    k = int(offset)
    length = builtins.max(0, builtins.min(n, m - k) if k >= 0 else builtins.min(n + k, m))
    batch = x.shape[:-2]
    if length == 0:
        return xp.empty(batch + (0,), dtype=x.dtype, device=x.device)
    flat = xp.reshape(x, batch + (n * m,))
    start = k if k >= 0 else -k * m
    return flat[..., start: start + (length - 1) * (m + 1) + 1: m + 1]


def trace(x: ndarray, /, *, offset: int = 0, dtype: Any = None) -> ndarray:
    """The sum of the ``offset``-th diagonal of the last two axes (``sum``'s dtype rules)."""
    return _xp().sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1: ndarray, x2: ndarray, /, *, axis: int = -1) -> ndarray:
    """The cross product of 3-vectors along ``axis`` (a negative axis; the others broadcast)."""
    xp = _xp()
    x1 = _operand(x1, x2 if isinstance(x2, ndarray) else None)
    x2 = _operand(x2, x1)
    lo = builtins.min(x1.ndim, x2.ndim)
    if not -lo <= axis < 0:
        raise IndexError(f"cross: axis must be in [-{lo}, -1], found {axis}")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"cross: axis {axis} must have 3 elements in both, found shapes {x1.shape} and {x2.shape}"
        )
    if xp.result_type(x1, x2).kind == "b":
        raise TypeError("cross: expected numeric dtypes, found bool")
    a = xp.unstack(x1, axis=axis)
    b = xp.unstack(x2, axis=axis)
    c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    shape = xp.broadcast_shapes(c[0].shape, c[1].shape, c[2].shape)
    c = [xp.broadcast_to(v, shape) for v in c]
    return xp.stack(c, axis=axis)


def _float(x: ndarray) -> ndarray:
    """``x`` in the float dtype its norms (and ``pinv``, ``matrix_rank``) compute in: floats as
    they are; int64 and uint64 in float64 where the device holds it (as NumPy, and as the
    solvers take them: exact to 2^53, where float32 rounds above 2^24), else in float32 as
    before float64 was held; narrower integers in float32."""
    xp = _xp()
    if x.dtype.kind == "f":
        return x
    if x.dtype.kind == "b":
        raise TypeError("norms of bool arrays are not defined")
    wide = x.dtype in (xp.int64, xp.uint64) and _has_float64(x)
    return xp.astype(x, xp.float64 if wide else xp.float32)


def _has_float64(x: ndarray) -> bool:
    """Whether ``x``'s device computes in float64 (an adapter may have 64-bit integers
    without f64)."""
    return "float64" in _xp().__array_namespace_info__().dtypes(device=x.device)


def vector_norm(
    x: ndarray,
    /,
    *,
    axis: Optional[Union[int, Tuple[int, ...]]] = None,
    keepdims: bool = False,
    ord: Union[int, float] = 2,  # noqa: A002
) -> ndarray:
    """The ``ord``-norm over ``axis`` (all axes when None), as the standard lists them."""
    xp = _xp()
    # A complex vector's norm is its magnitudes' (float32), for every ord.
    x = xp.abs(x) if x.dtype.kind == "c" else _float(x)
    a = xp.abs(x)
    kw = {"axis": axis, "keepdims": keepdims}
    if ord == math.inf:
        return xp.max(a, **kw)
    if ord == -math.inf:
        return xp.min(a, **kw)
    if ord == 0:
        return xp.astype(xp.sum(xp.not_equal(x, 0.0), **kw), x.dtype)
    if ord == 1:
        return xp.sum(a, **kw)
    if ord == 2:
        return xp.sqrt(xp.sum(x * x, **kw))
    p = float(ord)
    return xp.pow(xp.sum(xp.pow(a, p), **kw), 1.0 / p)


def matrix_norm(
    x: ndarray,
    /,
    *,
    keepdims: bool = False,
    ord: Any = "fro",  # noqa: A002
) -> ndarray:
    """The Frobenius norm, the induced 1- and ∞-norms (``ord`` ±1, ±inf), or from the
    singular values the 2-norms (``ord`` ±2: the largest, the smallest) and the nuclear norm
    (``'nuc'``: their sum) of the last two axes."""
    xp = _xp()
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: expected at least 2 axes, found shape {x.shape}")
    x = _float(x)
    if ord == "fro":
        return xp.sqrt(xp.sum(x * x, axis=(-2, -1), keepdims=keepdims))
    if ord in (1, -1, math.inf, -math.inf):
        over, then = (-2, -1) if ord in (1, -1) else (-1, -2)
        s = xp.sum(xp.abs(x), axis=over, keepdims=True)
        r = (xp.max if ord > 0 else xp.min)(s, axis=then, keepdims=True)
        return r if keepdims else xp.reshape(r, x.shape[:-2])
    if ord in (2, -2, "nuc"):
        s = svdvals(x)
        if ord == "nuc":
            r = xp.sum(s, axis=-1)
        else:
            r = (xp.max if ord == 2 else xp.min)(s, axis=-1)
        return r[..., None, None] if keepdims else r
    raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', ±1, ±2 or ±inf, found {ord!r}")


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> ndarray:  # noqa: A002
    """NumPy's ``linalg.norm``: with no ``axis``, the 2-norm of the flattened array (``ord``
    None) or, for 1-D and 2-D arrays, its vector or matrix ``ord``-norm; an integer ``axis``
    gives vector norms along it, a pair of axes matrix norms over them."""
    xp = _xp()
    x = _operand(x)
    if axis is None:
        if ord is None:
            r = vector_norm(xp.reshape(x, (-1,)))
            return xp.reshape(r, (1,) * x.ndim) if keepdims else r
        if x.ndim not in (1, 2):
            raise ValueError(f"norm: ord={ord!r} without axis needs a 1-D or 2-D array, found shape {x.shape}")
        axis = tuple(range(x.ndim))
    if isinstance(axis, int):
        axis = (axis,)
    axis = tuple(a + x.ndim if a < 0 else a for a in axis)
    if any(not 0 <= a < x.ndim for a in axis) or len(set(axis)) != len(axis):
        raise ValueError(f"norm: axis {axis} is invalid for an array of {x.ndim} axes")
    if len(axis) == 1:
        if isinstance(ord, str):
            raise ValueError(f"norm: ord={ord!r} is a matrix norm, but one axis was given")
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError(f"norm: axis must be an integer or a pair, found {axis}")
    r = matrix_norm(xp.moveaxis(x, axis, (-2, -1)), keepdims=keepdims, ord="fro" if ord is None else ord)
    return xp.moveaxis(r, (-2, -1), axis) if keepdims else r


def matrix_power(x: ndarray, n: int, /) -> ndarray:
    """``x`` multiplied by itself ``n`` times (square last two axes), by repeated squaring;
    a negative ``n`` raises the inverse to ``-n`` (``LinAlgError`` when it is singular)."""
    xp = _xp()
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: expected square matrices, found shape {x.shape}")
    n = int(n)
    if n < 0:
        return matrix_power(inv(x), -n)
    if n == 0:
        eye = xp.eye(x.shape[-1], dtype=x.dtype, device=x.device)
        return xp.astype(xp.broadcast_to(eye, x.shape), x.dtype)
    result = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    return result if result is not x else xp.astype(x, x.dtype)
