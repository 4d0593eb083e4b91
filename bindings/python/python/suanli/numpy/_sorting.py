"""``sort``, ``argsort``, ``searchsorted``, ``take`` and ``take_along_axis`` (the standard's
signatures): sorting is stable, on the device (a bitonic network over (key, position)
pairs), NaN last as in NumPy; positions out of range raise ``IndexError``."""

from __future__ import annotations

from .. import _native
from ._array import _operand, ndarray


def sort(x: ndarray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """``x`` sorted along ``axis``; always stable (``stable=False`` is allowed and the same)."""
    return ndarray(_native.array_sort(x._a, int(axis), bool(descending)))


def argsort(x: ndarray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """The int32 positions that sort ``x`` along ``axis`` (stable: equal values keep their
    order, also when ``descending``)."""
    return ndarray(_native.array_argsort(x._a, int(axis), bool(descending)))


def take(x: ndarray, indices: ndarray, /, *, axis: int = None) -> ndarray:
    """The elements at ``indices`` (an integer array of any shape) along ``axis`` (may be
    omitted for 1-D ``x``); negative positions count from the end."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for a {x.ndim}-D array")
        axis = 0
    return ndarray(_native.array_take(x._a, _operand(indices, x)._a, int(axis)))


def take_along_axis(x: ndarray, indices: ndarray, /, *, axis: int = -1) -> ndarray:
    """The element at each of ``indices`` along ``axis`` (``argsort``'s output undoes to
    ``sort``); ``indices`` has ``x``'s number of axes and broadcasts on the others."""
    return ndarray(_native.array_take_along_axis(x._a, _operand(indices, x)._a, int(axis)))


def searchsorted(x1: ndarray, x2: ndarray, /, *, side: str = "left", sorter: ndarray = None) -> ndarray:
    """Where each of ``x2`` goes in the sorted 1-D ``x1`` (int32), the first place
    (``side="left"``) or the last (``"right"``); with ``sorter``, ``x1`` sorted by it."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', found {side!r}")
    if sorter is not None:
        x1 = take(x1, sorter, axis=0)
    return ndarray(_native.array_searchsorted(x1._a, _operand(x2, x1)._a, side == "right"))


def _cumulative(x: ndarray, axis, dtype, include_initial: bool, product: bool) -> ndarray:
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"axis is required for a {x.ndim}-D array")
        axis = 0
    if dtype is not None:
        from . import astype

        # Cast first and accumulate in ``dtype`` (see ``sum``).
        x = astype(x, dtype, copy=False)
    r = ndarray(_native.array_cumulative(x._a, int(axis), bool(include_initial), product))
    return astype(r, dtype, copy=False) if dtype is not None else r


def cumulative_sum(x: ndarray, /, *, axis: int = None, dtype=None, include_initial: bool = False) -> ndarray:
    """Running sums along ``axis`` (integers accumulate in int32/uint32, as ``sum``)."""
    return _cumulative(x, axis, dtype, include_initial, False)


def cumulative_prod(x: ndarray, /, *, axis: int = None, dtype=None, include_initial: bool = False) -> ndarray:
    """Running products along ``axis``."""
    return _cumulative(x, axis, dtype, include_initial, True)
