"""``nonzero`` and the ``unique_*`` functions (the standard's signatures), on the device.

Their results' shapes depend on the data, so each reads a count back to the host before it
returns (CuPy's ``nonzero`` and ``unique`` wait for theirs too). ``unique_*`` sort the values
(a stable device sort, NaN last) and treat each NaN as a distinct value, as the standard
says; the index arrays are int32, this library's default index dtype.
"""

from __future__ import annotations

from typing import NamedTuple, Tuple

from .. import _native
from ._array import ndarray


class UniqueAllResult(NamedTuple):
    values: ndarray
    indices: ndarray
    inverse_indices: ndarray
    counts: ndarray


class UniqueCountsResult(NamedTuple):
    values: ndarray
    counts: ndarray


class UniqueInverseResult(NamedTuple):
    values: ndarray
    inverse_indices: ndarray


def nonzero(x: ndarray, /) -> Tuple[ndarray, ...]:
    """The indices of the nonzero elements, one int32 array per axis, in C order (NaN is
    nonzero). A 0-d array is refused (``ValueError``), as the standard asks."""
    return tuple(ndarray(a) for a in _native.array_nonzero(x._a))


def _unique(x: ndarray, indices: bool, inverse: bool, counts: bool):
    v, i, inv, c = _native.array_unique(x._a, indices, inverse, counts)
    wrap = lambda a: None if a is None else ndarray(a)  # noqa: E731
    return ndarray(v), wrap(i), wrap(inv), wrap(c)


def unique_values(x: ndarray, /) -> ndarray:
    """The distinct values of ``x``, sorted, as a 1-D array."""
    return _unique(x, False, False, False)[0]


def unique_counts(x: ndarray, /) -> UniqueCountsResult:
    """The distinct values and how often each occurs."""
    v, _, _, c = _unique(x, False, False, True)
    return UniqueCountsResult(v, c)


def unique_inverse(x: ndarray, /) -> UniqueInverseResult:
    """The distinct values, and for each element of ``x`` its value's position among them
    (an array of ``x``'s shape)."""
    v, _, inv, _ = _unique(x, False, True, False)
    return UniqueInverseResult(v, inv)


def unique_all(x: ndarray, /) -> UniqueAllResult:
    """The distinct values, each one's first position in the flattened ``x``, the inverse
    (``x``'s shape) and the counts."""
    v, i, inv, c = _unique(x, True, True, True)
    return UniqueAllResult(v, i, inv, c)
