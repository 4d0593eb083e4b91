"""The standard's type promotion for ``result_type`` (the native arrays apply the same table
to operations; this is its host-side mirror for dtype arguments)."""

from __future__ import annotations

from typing import Any

import numpy as _np

from ._array import DTYPES, ndarray

_ORDER = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _promote(a: _np.dtype, b: _np.dtype) -> _np.dtype:
    if a == b:
        return a
    ka, kb = a.kind, b.kind
    if (ka == "c" and b.name == "float64") or (kb == "c" and a.name == "float64"):
        raise TypeError(f"no common dtype of {a} and {b} is supported (complex128 is not)")
    if ka == "c":
        return a
    if kb == "c":
        return b
    if ka == "f" and kb == "f":
        return a if a.itemsize >= b.itemsize else b  # float16 with float32: float32
    if ka == "f":
        return a
    if kb == "f":
        return b
    if ka == "b":
        return b
    if kb == "b":
        return a
    if ka == kb:
        return a if _ORDER[a.name] >= _ORDER[b.name] else b
    s, u = (a, b) if ka == "i" else (b, a)
    if u.name == "uint8":
        return s if _ORDER[s.name] >= 16 else DTYPES["int16"]
    if u.name == "uint16":
        return s if _ORDER[s.name] >= 32 else DTYPES["int32"]
    if u.name == "uint32":
        return DTYPES["int64"]
    # NumPy gives float64, which rounds values past 2**53: refused (the standard leaves it out).
    raise TypeError(f"no common dtype of {a} and {b} is supported (uint64 with a signed type has none: astype one first)")


def result_type(*arrays_and_dtypes: Any) -> _np.dtype:
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    out = None
    for v in arrays_and_dtypes:
        if isinstance(v, (bool, int, float, complex)) and not isinstance(v, _np.generic):
            continue  # Python scalars take the other operands' dtype
        d = v.dtype if isinstance(v, ndarray) else _np.dtype(v)
        if d.name not in DTYPES:
            raise TypeError(f"dtype {d} is not supported")
        out = d if out is None else _promote(out, d)
    if out is None:
        raise ValueError("result_type needs at least one array or dtype")
    return out
