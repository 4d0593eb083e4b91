"""``suanli.numpy.random``: NumPy's ``Generator`` API on the device (Philox4x32-10).

::

    rng = suanli.numpy.random.default_rng(0)
    x = rng.normal(size=(1000, 3))            # float32 on the current device
    k = rng.integers(0, 10, size=100)         # int32

A seed gives the same values in the same order on every device (the generator is a key and
a counter, not a state). ``permutation``, ``shuffle`` and ``choice`` sort random keys on the
device (a permutation is the stable argsort of 32-bit random words); ``choice`` with ``p``
searches a uniform draw in ``p``'s running sum, or without replacement keeps the largest
``log(u) / p``. Positions are int32 (NumPy's are int64); ``size=None`` gives a 0-d array.
"""

from __future__ import annotations

import secrets
from typing import Any, Optional

from .. import _native
from .._device import Device, current_device
from ._array import _dtype_name, ndarray


def _size(size: Any) -> list:
    if size is None:
        return []
    if isinstance(size, int):
        return [size]
    return [int(s) for s in size]


class Generator:
    """Random arrays from one seed's stream on one device (NumPy's ``Generator``)."""

    def __init__(self, seed: Optional[int] = None, *, device: Optional[Device] = None, stream: int = 0) -> None:
        if seed is None:
            seed = secrets.randbits(64)
        if not isinstance(seed, int) or seed < 0 or seed >= 1 << 64:
            raise ValueError(f"seed must be an integer in [0, 2**64), found {seed!r}")
        self.device = device if device is not None else current_device()
        self._g = _native.Generator(self.device, seed, stream)

    def random(self, size: Any = None, dtype: Any = "float32") -> ndarray:
        """Floats in [0, 1) (24 random bits each)."""
        _float_only(dtype)
        return ndarray(self._g.uniform(0.0, 1.0, _size(size)))

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> ndarray:
        return ndarray(self._g.uniform(float(low), float(high), _size(size)))

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> ndarray:
        return ndarray(self._g.normal(float(loc), float(scale), _size(size)))

    def standard_normal(self, size: Any = None, dtype: Any = "float32") -> ndarray:
        _float_only(dtype)
        return self.normal(0.0, 1.0, size)

    def integers(self, low: int, high: Optional[int] = None, size: Any = None, dtype: Any = "int32", endpoint: bool = False) -> ndarray:
        if high is None:
            low, high = 0, low
        if endpoint:
            high += 1
        return ndarray(self._g.integers(int(low), int(high), _size(size), _dtype_name(dtype)))


    def _array(self, v: Any) -> ndarray:
        """``v`` as an array on this generator's device."""
        if isinstance(v, ndarray):
            return v
        from . import asarray

        return asarray(v, device=self.device)

    def permutation(self, x: Any, axis: int = 0) -> ndarray:
        """A random permutation of ``range(x)`` (an int), or a copy of the array ``x`` with
        its elements along ``axis`` in random order."""
        if isinstance(x, int) and not isinstance(x, bool):
            if x < 0:
                raise ValueError(f"permutation: n must be >= 0, found {x}")
            return ndarray(self._g.permutation(x))
        return ndarray(self._g.permuted(self._array(x)._a, int(axis)))

    def shuffle(self, x: ndarray, axis: int = 0) -> None:
        """Reorders ``x`` along ``axis`` at random, in place."""
        if not isinstance(x, ndarray):
            raise TypeError(f"shuffle: x must be a suanli.numpy array, found {type(x).__name__}")
        self._g.shuffle(x._a, int(axis))

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None, axis: int = 0, shuffle: bool = True) -> ndarray:
        """Samples from ``range(a)`` (an int) or from the array ``a`` along ``axis``, with or
        without replacement, uniformly or with probabilities ``p`` (each >= 0, summing to 1).
        ``shuffle`` is accepted; samples without replacement always come in random order."""
        import numpy as _np

        if isinstance(a, int) and not isinstance(a, bool):
            if a < 0:
                raise ValueError(f"choice: a must be >= 0, found {a}")
            n, arr = a, None
        else:
            arr = self._array(a)
            if arr.ndim == 0:
                raise ValueError("choice: a must be an int or an array of at least one axis")
            axis = int(axis)
            if not -arr.ndim <= axis < arr.ndim:
                raise ValueError(f"choice: axis {axis} is out of range for {arr.ndim} axes")
            n = arr.shape[axis]
        pa = None
        if p is not None:
            if not isinstance(p, ndarray):
                p = _np.asarray(p, dtype=_np.float32)
            pa = self._array(p)._a
        shape = _size(size)
        pos = ndarray(self._g.choice(n, shape, bool(replace), pa))
        if arr is None:
            return pos
        from ._sorting import take

        return take(arr, pos, axis=axis)


def _float_only(dtype: Any) -> None:
    if _dtype_name(dtype) != "float32":
        raise TypeError(f"random floats are float32 here; found dtype {dtype!r}")


def default_rng(seed: Optional[int] = None, *, device: Optional[Device] = None) -> Generator:
    """A generator for ``seed`` (fresh entropy when None) on ``device`` (default: current)."""
    return Generator(seed, device=device)
