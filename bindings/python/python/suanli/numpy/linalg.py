"""``suanli.numpy.linalg``: matrix products on the tuned matmul kernels (views read in
place), and what is built from products, views and reductions (``vecdot``, ``tensordot``,
``outer``, ``diagonal``, ``trace``, ``cross``, the vector and matrix norms that need no
decomposition, ``matrix_power`` with ``n >= 0``). Decompositions and solvers (``solve``,
``inv``, ``det``, ``cholesky``, ``qr``, ``eigh``, ``svd``, …) are not there yet."""

from __future__ import annotations

import builtins
import math
from typing import Any, Optional, Tuple, Union

from ._array import _operand, ndarray

__all__ = [
    "matmul", "matrix_transpose", "vecdot", "tensordot", "outer", "diagonal", "trace",
    "cross", "vector_norm", "matrix_norm", "matrix_power",
]


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
    operands' promoted dtype, as the standard's ``vecdot`` for real dtypes."""
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
    xp = _xp()
    if x.dtype.kind == "f":
        return x
    if x.dtype.kind == "b":
        raise TypeError("norms of bool arrays are not defined")
    return xp.astype(x, xp.float32)


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
    """The Frobenius norm, or the induced 1- and ∞-norms (``ord`` ±1, ±inf) of the last two
    axes. The 2-norm and the nuclear norm need singular values: not supported yet."""
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
        raise NotImplementedError(f"matrix_norm: ord={ord!r} needs singular values (svd), not supported yet")
    raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', ±1, ±2 or ±inf, found {ord!r}")


def matrix_power(x: ndarray, n: int, /) -> ndarray:
    """``x`` multiplied by itself ``n`` times (``n >= 0``; square last two axes), by
    repeated squaring. A negative ``n`` needs ``inv``: not supported yet."""
    xp = _xp()
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: expected square matrices, found shape {x.shape}")
    n = int(n)
    if n < 0:
        raise NotImplementedError("matrix_power: a negative power needs inv, not supported yet")
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
