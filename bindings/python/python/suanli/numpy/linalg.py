"""``suanli.numpy.linalg``: matrix products on the tuned matmul kernels (views read in
place). Decompositions and solvers are not there yet."""

from __future__ import annotations

from typing import Any

from ._array import _operand, ndarray


def matmul(x1: Any, x2: Any, /) -> ndarray:
    """The matrix product with NumPy's broadcasting and 1-D rules (``x1 @ x2``)."""
    a = _operand(x1, x2 if isinstance(x2, ndarray) else None)
    b = _operand(x2, a)
    return ndarray(a._a.matmul(b._a))


def matrix_transpose(x: ndarray, /) -> ndarray:
    return x.mT


def vecdot(x1: ndarray, x2: ndarray, /, *, axis: int = -1) -> ndarray:
    """Σ x1·x2 over ``axis`` (broadcast), as the standard's ``vecdot`` for real dtypes."""
    from . import multiply, sum

    return sum(multiply(x1, x2), axis=axis)
