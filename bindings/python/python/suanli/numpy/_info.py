"""The standard's dtype and inspection functions of ``suanli.numpy``: ``isdtype``,
``finfo``, ``iinfo``, ``can_cast`` and ``__array_namespace_info__()``."""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple, Optional

import numpy as _np

from .._device import Device, current_device
from ._array import DTYPES, _dtype_name, ndarray

def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    d = _np.dtype(dtype)
    if not isinstance(kind, str):
        return d == _np.dtype(kind)
    return {
        "bool": d.kind == "b",
        "signed integer": d.kind == "i",
        "unsigned integer": d.kind == "u",
        "integral": d.kind in "iu",
        "real floating": d.kind == "f",
        "complex floating": d.kind == "c",
        "numeric": d.kind in "iufc",
    }[kind]


class finfo_object(NamedTuple):
    """``finfo``'s answer: the standard's fields, as Python numbers."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: _np.dtype

    @property
    def tiny(self) -> float:
        """NumPy's name for ``smallest_normal``."""
        return self.smallest_normal

    @property
    def resolution(self) -> float:
        """NumPy's decimal resolution (1e-6 for float32)."""
        return float(_np.finfo(self.dtype).resolution)


class iinfo_object(NamedTuple):
    """``iinfo``'s answer: the standard's fields, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: _np.dtype


def finfo(type: Any, /) -> finfo_object:  # noqa: A002
    d = DTYPES[_dtype_name(type.dtype if isinstance(type, ndarray) else type)]
    if d.kind not in "fc":
        raise TypeError(f"finfo: expected a floating-point dtype, found {d}")
    f = _np.finfo(d)
    # complex64: its components' float32 (the standard's and NumPy's answer).
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), f.dtype)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    d = DTYPES[_dtype_name(type.dtype if isinstance(type, ndarray) else type)]
    if d.kind not in "iu":
        raise TypeError(f"iinfo: expected an integer dtype, found {d}")
    i = _np.iinfo(d)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), d)


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    f = from_.dtype if isinstance(from_, ndarray) else _np.dtype(from_)
    return _np.can_cast(f, _np.dtype(to))


class _Info:
    """``__array_namespace_info__()``: the devices and the dtypes each holds."""

    def capabilities(self) -> dict:
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": None}

    def default_device(self) -> Device:
        return current_device()

    def devices(self) -> list:
        return [current_device()]

    def default_dtypes(self, *, device: Optional[Device] = None) -> dict:
        """float32 stays the default float even where float64 exists (GPUs are fast at
        float32; float64 is asked for by name or kept from NumPy data)."""
        return {
            "real floating": DTYPES["float32"],
            "complex floating": DTYPES["complex64"],
            "integral": DTYPES["int32"],
            "indexing": DTYPES["int32"],
        }

    def dtypes(self, *, device: Optional[Device] = None, kind: Any = None) -> dict:
        """The dtypes ``device`` (None: the current one) computes in: float64 only where the
        adapter has f64 and 64-bit integers in shaders, int64 and uint64 only where it has
        64-bit integers."""
        info = (device if device is not None else current_device()).info
        f64 = info.shader_f64 and info.shader_int64
        i64 = info.shader_int64
        return {
            n: d
            for n, d in DTYPES.items()
            if (kind is None or isdtype(d, kind))
            and (n != "float64" or f64)
            and (n not in ("int64", "uint64") or i64)
        }


def __array_namespace_info__() -> _Info:
    return _Info()
