"""``sort`` and ``argsort`` (the standard's signatures): stable, on the device (a bitonic
network over (key, position) pairs), NaN last as in NumPy."""

from __future__ import annotations

from .. import _native
from ._array import ndarray


def sort(x: ndarray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """``x`` sorted along ``axis``; always stable (``stable=False`` is allowed and the same)."""
    return ndarray(_native.array_sort(x._a, int(axis), bool(descending)))


def argsort(x: ndarray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """The int32 positions that sort ``x`` along ``axis`` (stable: equal values keep their
    order, also when ``descending``)."""
    return ndarray(_native.array_argsort(x._a, int(axis), bool(descending)))
