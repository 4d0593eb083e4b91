"""``suanli.numpy.fft``: discrete Fourier transforms on the device (NumPy's ``numpy.fft``
and the array API standard's ``fft`` extension), in complex64.

::

    x = xp.asarray(np.random.default_rng(0).standard_normal(4096).astype(np.float32))
    X = xp.fft.rfft(x)                        # 2049 complex64 values
    y = xp.fft.irfft(X, n=4096)               # x again, to float32 rounding

The one-axis transforms run in the Rust crate (``suanli::array::fft``: a Stockham FFT of
radix-4 passes, and one radix-2 pass for odd log2 n, for powers of two, Bluestein's algorithm for other lengths, any axis); the n-dimensional
ones apply them axis by axis, as the transforms are separable. ``fftfreq`` and
``rfftfreq`` are computed on the host in float64 and rounded once.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Optional, Sequence

import numpy as _np

from .._device import Device
from ._array import _operand, ndarray

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "fft2", "ifft2", "rfft", "irfft", "rfftn", "irfftn",
    "rfft2", "irfft2", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm: Optional[str]) -> str:
    norm = "backward" if norm is None else norm
    if norm not in _SWAP:
        raise ValueError(f'norm must be "backward", "ortho" or "forward", found {norm!r}')
    return norm


def _n(n: Any) -> Optional[int]:
    if n is None:
        return None
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified")
    return n


def _x(x: Any) -> ndarray:
    x = _operand(x)
    if x.ndim == 0:
        raise ValueError("fft: expected an array of at least one axis, found a 0-d array")
    return x


def fft(x: Any, /, n: Any = None, axis: int = -1, norm: Optional[str] = "backward") -> ndarray:
    """The one-dimensional discrete Fourier transform along ``axis`` (complex64)."""
    return ndarray(_x(x)._a.fft(_n(n), operator.index(axis), _norm(norm), False))


def ifft(x: Any, /, n: Any = None, axis: int = -1, norm: Optional[str] = "backward") -> ndarray:
    """The inverse of ``fft``."""
    return ndarray(_x(x)._a.fft(_n(n), operator.index(axis), _norm(norm), True))


def rfft(x: Any, /, n: Any = None, axis: int = -1, norm: Optional[str] = "backward") -> ndarray:
    """The transform of real input: the ``n // 2 + 1`` non-negative frequencies."""
    return ndarray(_x(x)._a.rfft(_n(n), operator.index(axis), _norm(norm)))


def irfft(x: Any, /, n: Any = None, axis: int = -1, norm: Optional[str] = "backward") -> ndarray:
    """The inverse of ``rfft``: real output of length ``n`` (default ``2 * (m - 1)``)."""
    return ndarray(_x(x)._a.irfft(_n(n), operator.index(axis), _norm(norm)))


def hfft(x: Any, /, n: Any = None, axis: int = -1, norm: Optional[str] = "backward") -> ndarray:
    """The transform of a Hermitian-symmetric signal given by its first half: real output."""
    from . import conj

    x = _x(x)
    return irfft(conj(x) if x.dtype.kind == "c" else x, n, axis, _SWAP[_norm(norm)])


def ihfft(x: Any, /, n: Any = None, axis: int = -1, norm: Optional[str] = "backward") -> ndarray:
    """The inverse of ``hfft``: the first half of the Hermitian spectrum of real input."""
    from . import conj

    return conj(rfft(x, n, axis, _SWAP[_norm(norm)]))


def _plan(x: ndarray, s: Any, axes: Any, op: str) -> list:
    """(length or None, axis) pairs for an n-dimensional transform, as the standard reads
    ``s`` and ``axes``."""
    if axes is None:
        axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        axes = [operator.index(a) for a in ([axes] if isinstance(axes, int) else axes)]
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise IndexError(f"{op}: axis {a} is out of range for {x.ndim} axes")
    axes = [a % x.ndim for a in axes]
    if s is None:
        lengths: list = [None] * len(axes)
    else:
        s = list(s)
        if len(s) != len(axes):
            raise ValueError(f"{op}: s and axes must have the same length, found {len(s)} and {len(axes)}")
        lengths = [None if operator.index(v) == -1 else _n(v) for v in s]
    return list(zip(lengths, axes))


def fftn(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = None,
         norm: Optional[str] = "backward") -> ndarray:
    """The n-dimensional transform over ``axes`` (all by default), lengths ``s``."""
    x = _x(x)
    for n, a in reversed(_plan(x, s, axes, "fftn")):
        x = fft(x, n, a, norm)
    return x


def ifftn(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = None,
          norm: Optional[str] = "backward") -> ndarray:
    """The inverse of ``fftn``."""
    x = _x(x)
    for n, a in reversed(_plan(x, s, axes, "ifftn")):
        x = ifft(x, n, a, norm)
    return x


def rfftn(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = None,
          norm: Optional[str] = "backward") -> ndarray:
    """``rfft`` over the last of ``axes``, then ``fft`` over the others."""
    x = _x(x)
    plan = _plan(x, s, axes, "rfftn")
    if not plan:
        raise ValueError("rfftn: expected at least one axis")
    n, a = plan[-1]
    x = rfft(x, n, a, norm)
    for n, a in reversed(plan[:-1]):
        x = fft(x, n, a, norm)
    return x


def irfftn(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = None,
           norm: Optional[str] = "backward") -> ndarray:
    """The inverse of ``rfftn``: ``ifft`` over all but the last of ``axes``, then ``irfft``."""
    x = _x(x)
    plan = _plan(x, s, axes, "irfftn")
    if not plan:
        raise ValueError("irfftn: expected at least one axis")
    for n, a in plan[:-1]:
        x = ifft(x, n, a, norm)
    n, a = plan[-1]
    return irfft(x, n, a, norm)


def fft2(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = (-2, -1),
         norm: Optional[str] = "backward") -> ndarray:
    """``fftn`` over the last two axes."""
    return fftn(x, s, axes, norm)


def ifft2(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = (-2, -1),
          norm: Optional[str] = "backward") -> ndarray:
    """``ifftn`` over the last two axes."""
    return ifftn(x, s, axes, norm)


def rfft2(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = (-2, -1),
          norm: Optional[str] = "backward") -> ndarray:
    """``rfftn`` over the last two axes."""
    return rfftn(x, s, axes, norm)


def irfft2(x: Any, /, s: Optional[Sequence[int]] = None, axes: Any = (-2, -1),
           norm: Optional[str] = "backward") -> ndarray:
    """``irfftn`` over the last two axes."""
    return irfftn(x, s, axes, norm)


def _freq_dtype(dtype: Any) -> Any:
    d = _np.dtype("float32" if dtype is None else dtype)
    if d.kind != "f":
        raise TypeError(f"fftfreq: expected a real floating-point dtype, found {d}")
    return d


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    """The sample frequencies of an ``n``-point transform with spacing ``d``:
    ``[0, 1, …, (n - 1) // 2, -(n // 2), …, -1] / (d · n)``."""
    from . import asarray

    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fftfreq: n must be positive, found {n}")
    k = _np.concatenate([_np.arange(0, (n - 1) // 2 + 1), _np.arange(-(n // 2), 0)])
    return asarray((k / (builtins.float(d) * n)).astype(_freq_dtype(dtype)), device=device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    """The non-negative sample frequencies of an ``n``-point ``rfft``:
    ``[0, 1, …, n // 2] / (d · n)``."""
    from . import asarray

    n = operator.index(n)
    if n < 1:
        raise ValueError(f"rfftfreq: n must be positive, found {n}")
    k = _np.arange(0, n // 2 + 1)
    return asarray((k / (builtins.float(d) * n)).astype(_freq_dtype(dtype)), device=device)


def _shift(x: Any, axes: Any, sign: int) -> ndarray:
    from . import roll

    x = _operand(x)
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, int):
        axes = [axes]
    axes = list(axes)
    if not axes:
        return x
    shifts = [sign * (x.shape[a] // 2) for a in axes]
    return roll(x, shifts, axis=tuple(axes))


def fftshift(x: Any, /, axes: Any = None) -> ndarray:
    """The zero frequency moved to the middle (``roll`` by ``n // 2`` along ``axes``)."""
    return _shift(x, axes, 1)


def ifftshift(x: Any, /, axes: Any = None) -> ndarray:
    """The inverse of ``fftshift``."""
    return _shift(x, axes, -1)
