"""The creation functions of ``suanli.numpy``: ``asarray`` (from NumPy, lists, scalars,
DLPack), ``zeros``, ``ones``, ``full``, ``empty``, their ``*_like`` forms, ``arange``,
``linspace``, ``eye``, ``tril`` and ``triu``."""

from __future__ import annotations

import builtins
import operator
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as _np

from .. import _native
from .._device import Device, current_device
from ._array import DTYPES, _dtype_name, ndarray

_DEFAULT_INT = "int32"
_DEFAULT_FLOAT = "float32"


def _device_of(device: Optional[Device]) -> Device:
    return device if device is not None else current_device()


def _infer_dtype(obj: Any) -> str:
    """The default dtype of Python data: bool, int32 or float32 by the values' kind."""
    a = _np.asarray(obj)
    if a.dtype.kind == "b":
        return "bool"
    if a.dtype.kind in "iu":
        return _DEFAULT_INT
    if a.dtype.kind == "f":
        return _DEFAULT_FLOAT
    if a.dtype.kind == "c":
        return "complex64"
    raise TypeError(f"cannot make an array of {a.dtype} values")


def asarray(
    obj: Any,
    /,
    *,
    dtype: Any = None,
    device: Optional[Device] = None,
    copy: Optional[builtins.bool] = None,
) -> ndarray:
    """``obj`` (an array, a NumPy array, nested lists, a Python scalar or anything with
    ``__dlpack__``/``__array__``) as an array on ``device``. NumPy arrays keep their dtype
    when it is supported (float64 stays float64 and int64 int64, on a device that computes
    in them, a TypeError elsewhere: there is no silent narrowing); Python data takes bool,
    int32 or float32 by kind (int32 and float32 stay the defaults everywhere; integers
    outside int32 need ``dtype=int64``)."""
    if isinstance(obj, ndarray):
        x = obj
        if device is not None and device is not x.device:
            x = x.to_device(device)
        if dtype is not None and _dtype_name(dtype) != x.dtype.name:
            if copy is False:
                raise ValueError("asarray: a dtype change needs a copy, and copy=False was given")
            return ndarray(x._a.astype(_dtype_name(dtype)))
        if copy:
            return ndarray(x._a.copy())
        return x
    if copy is False:
        raise ValueError("asarray: host data must be copied to the device, and copy=False was given")
    dev = _device_of(device)
    if isinstance(obj, (_np.ndarray, _np.generic)) or hasattr(obj, "__array__"):
        a = _np.asarray(obj)
        name = _dtype_name(dtype) if dtype is not None else None
        if name is None:
            if a.dtype.name not in DTYPES:
                raise TypeError(
                    f"asarray: {a.dtype} is not supported (yet); pass dtype= to convert "
                    f"(for example dtype=suanli.numpy.float32) — the values are not narrowed silently"
                )
            name = a.dtype.name
    else:
        name = _dtype_name(dtype) if dtype is not None else _infer_dtype(obj)
        a = _np.asarray(obj)
        # (An empty list is float64 to NumPy: it has no values to refuse.)
        if a.size and a.dtype.kind == "f" and _np.dtype(name).kind in "iub":
            raise TypeError(f"asarray: float values cannot become {name} without a cast (use astype)")
        if a.size and a.dtype.kind == "c" and _np.dtype(name).kind != "c":
            raise TypeError(f"asarray: complex values cannot become {name} (take real, imag or abs)")
        if a.dtype.kind == "i" and name != "bool":
            info = _np.iinfo(name) if _np.dtype(name).kind in "iu" else None
            if info is not None and a.size and (a.min() < info.min or a.max() > info.max):
                hint = " (pass dtype=int64)" if dtype is None else ""
                raise OverflowError(f"asarray: integers out of range for {name}{hint}")
    # order="C", not ascontiguousarray: that makes 0-d data 1-d.
    host = _np.asarray(a.astype(name, copy=False), order="C")
    return ndarray(_native.Array.from_bytes(host.tobytes(), name, list(host.shape), dev))


def asnumpy(x: Any) -> _np.ndarray:
    """The values as a NumPy array (CuPy's ``asnumpy``)."""
    return x.get() if isinstance(x, ndarray) else _np.asarray(x)


def from_dlpack(x: Any, /, *, device: Optional[Device] = None, copy: Optional[builtins.bool] = None) -> ndarray:
    """An array from any object with ``__dlpack__`` (copied to the device)."""
    return asarray(_np.from_dlpack(x), device=device, copy=None if copy is None else True)


def _shape(shape: Union[int, Sequence[int]]) -> list:
    return [int(shape)] if isinstance(shape, (int, _np.integer)) else [int(d) for d in shape]


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    if isinstance(fill_value, ndarray):
        fill_value = fill_value.get().item()
    if dtype is None:
        dtype = "bool" if isinstance(fill_value, builtins.bool) else (
            _DEFAULT_INT if isinstance(fill_value, int) else
            "complex64" if isinstance(fill_value, complex) else _DEFAULT_FLOAT)
    if isinstance(fill_value, complex) and _np.dtype(dtype).kind != "c":
        raise TypeError(f"full: a complex fill value cannot become {_np.dtype(dtype)}")
    if _np.dtype(dtype).name in ("int64", "uint64") and isinstance(fill_value, int):
        # Every bit of a Python int (the native fill goes through a float64): one element
        # uploaded, broadcast and copied.
        name = _np.dtype(dtype).name
        one = _native.Array.from_bytes(_np.asarray(fill_value, dtype=name).tobytes(), name, [], _device_of(device))
        return ndarray(one.broadcast_to(_shape(shape)).copy())
    if _np.dtype(dtype).kind == "c":
        # complex64: zeros plus the value (a scalar of two words), one fused kernel when read.
        z = ndarray(_native.Array.full(_shape(shape), 0.0, "complex64", _device_of(device)))
        return z._bin("add", complex(fill_value))
    return ndarray(_native.Array.full(_shape(shape), float(fill_value), _dtype_name(dtype), _device_of(device)))


def zeros(shape: Any, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    return full(shape, 0.0, dtype=dtype or _DEFAULT_FLOAT, device=device)


def ones(shape: Any, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    return full(shape, 1.0, dtype=dtype or _DEFAULT_FLOAT, device=device)


def empty(shape: Any, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    return ndarray(_native.Array.empty(_shape(shape), _dtype_name(dtype or _DEFAULT_FLOAT), _device_of(device)))


def _like(x: ndarray, dtype: Any, device: Optional[Device]) -> Tuple[Any, Device]:
    return (dtype if dtype is not None else x.dtype), (device if device is not None else x.device)


def zeros_like(x: ndarray, /, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    d, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=d, device=dev)


def ones_like(x: ndarray, /, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    d, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=d, device=dev)


def empty_like(x: ndarray, /, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    d, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=d, device=dev)


def full_like(x: ndarray, /, fill_value: Any, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    d, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=d, device=dev)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    if stop is None:
        start, stop = 0, start
    ints = builtins.all(isinstance(v, (int, _np.integer)) for v in (start, stop, step))
    if dtype is None:
        dtype = _DEFAULT_INT if ints else _DEFAULT_FLOAT
    name = _dtype_name(dtype)
    if ints and name in ("int64", "uint64"):
        return _arange64(int(start), int(stop), int(step), name, _device_of(device))
    return ndarray(_native.Array.arange(float(start), float(stop), float(step), name, _device_of(device)))


def _arange64(start: int, stop: int, step: int, name: str, device: Any) -> ndarray:
    """int64/uint64 ``arange`` of Python ints, exact over the whole 64-bit range (the native
    ``arange`` takes floats, exact only to 2^53): the length in Python's integers, the
    values as positions·step + start in wrapping int64 arithmetic, then reinterpreted."""
    if step == 0:
        raise ValueError("arange: expected a step other than 0, found 0")
    n = builtins.max(0, -((start - stop) // step))
    lo, hi = (0, 2**64) if name == "uint64" else (-(2**63), 2**63)
    last = start + (n - 1) * step
    if n and not (lo <= start < hi and lo <= last < hi):
        raise OverflowError(f"arange: values from {start} to {last} do not fit {name}")

    def wrap(v: int) -> int:
        v &= 2**64 - 1
        return v - 2**64 if v >= 2**63 else v

    i = ndarray(_native.Array.arange(0.0, float(n), 1.0, "int64", device))
    r = i * wrap(step) + wrap(start)
    return ndarray(r._a.astype(name)) if name == "uint64" else r


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Optional[Device] = None, endpoint: builtins.bool = True) -> ndarray:
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, found {num}")
    return ndarray(_native.Array.linspace(float(start), float(stop), int(num), endpoint, _dtype_name(dtype or _DEFAULT_FLOAT), _device_of(device)))


def eye(n_rows: int, n_cols: Optional[int] = None, /, *, k: int = 0, dtype: Any = None, device: Optional[Device] = None) -> ndarray:
    m = n_rows if n_cols is None else n_cols
    # A diagonal past either edge is all zeros: clamp it into what the device's int32 holds.
    k = builtins.max(builtins.min(int(k), int(m)), -int(n_rows))
    return ndarray(_native.Array.eye(int(n_rows), int(m), k, _dtype_name(dtype or _DEFAULT_FLOAT), _device_of(device)))


def tril(x: ndarray, /, *, k: int = 0) -> ndarray:
    return ndarray(x._a.triangle(int(k), False))


def triu(x: ndarray, /, *, k: int = 0) -> ndarray:
    return ndarray(x._a.triangle(int(k), True))


