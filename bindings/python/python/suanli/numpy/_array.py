"""``ndarray``: the array type of ``suanli.numpy``, a thin handle on the native array.

Every operation runs in the Rust crate (``suanli::array``); this file turns Python's
operators, indices and scalars into its calls. Elementwise operations queue an expression
and return at once; the values are computed, fused into one kernel, when something reads
them (``numpy.asarray(x)``, ``float(x)``, printing) or a reduction, view or copy needs them.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Optional, Tuple

import numpy as _np

from .. import _native
from .._device import Device, current_device

_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64",
)
#: The dtypes this library holds, as NumPy dtype objects (CuPy's convention): ``x.dtype ==
#: xp.float32`` and ``numpy.asarray(x).dtype`` agree.
DTYPES = {n: _np.dtype(n) for n in _NAMES}


def _dtype_name(dtype: Any) -> str:
    """The name of a dtype argument (a NumPy dtype, a type such as ``xp.int8``, or a name),
    refused with ``TypeError`` when this library does not hold it."""
    try:
        d = _np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"expected a dtype, found {dtype!r}") from e
    if d.name not in DTYPES:
        raise TypeError(
            f"dtype {d.name} is not supported (yet) by suanli.numpy; the dtypes are "
            + ", ".join(_NAMES)
        )
    return d.name


def _native_of(x: Any) -> Any:
    return x._a if isinstance(x, ndarray) else None


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (builtins.bool, int, float, complex)) and not isinstance(v, _np.generic)


_INDEX_TYPE_ERROR = "arrays used as indices must be of integer (or boolean) type"


def _index_array(k: Any, like: Optional["ndarray"]) -> tuple:
    """An integer array or boolean mask as a native index entry ("a", array): NumPy arrays
    and (nested) lists are uploaded (integers as int32, refused when out of its range)."""
    if isinstance(k, ndarray):
        if k.dtype.kind not in "biu":
            raise IndexError(f"{_INDEX_TYPE_ERROR}, found {k.dtype}")
        return ("a", k._a)
    try:
        h = _np.asarray(k)
    except (ValueError, TypeError):
        raise IndexError(f"{_INDEX_TYPE_ERROR}, found {k!r}") from None
    if h.dtype.kind == "f" and h.size == 0:
        h = h.astype(_np.int32)  # NumPy takes x[[]] as an empty integer index
    if h.dtype.kind == "b":
        h = h.astype(_np.bool_)
    elif h.dtype.kind in "iu":
        if h.size and (h.min() < -(1 << 31) or h.max() >= 1 << 31):
            raise IndexError("index values out of the int32 range")
        h = h.astype(_np.int32)
    else:
        raise IndexError(f"{_INDEX_TYPE_ERROR}, found {h.dtype}")
    dev = like.device if like is not None else current_device()
    native = _native.Array.from_bytes(h.tobytes(), h.dtype.name, list(h.shape), dev)
    return ("a", native)


def _index_entries(key: Any, ndim: int, like: Optional["ndarray"] = None) -> list:
    """An index as the native entries: positions, slices, None, ..., and integer arrays or
    boolean masks (NumPy's advanced indexing)."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if k is None:
            out.append(("n",))
        elif k is Ellipsis:
            out.append(("e",))
        elif isinstance(k, slice):
            parts = []
            for v in (k.start, k.stop, k.step):
                parts.append(None if v is None else operator.index(v))
            if parts[2] == 0:
                raise ValueError("slice step cannot be zero")
            out.append(("s", *parts))
        elif isinstance(k, (builtins.bool, _np.bool_)):
            out.append(_index_array(_np.asarray(k, dtype=_np.bool_), like))  # a 0-d mask
        elif isinstance(k, ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
            out.append(("i", int(k)))
        elif isinstance(k, (ndarray, _np.ndarray, list)):
            out.append(_index_array(k, like))
        else:
            try:
                out.append(("i", operator.index(k)))
            except TypeError:
                raise IndexError(
                    "only integers, slices, None, ..., and integer or boolean arrays are "
                    f"valid indices, found {type(k).__name__}"
                ) from None
    return out


class ndarray:
    """An N-dimensional array on a device (the array API standard's array object).

    Create one with ``suanli.numpy.asarray`` (from NumPy, lists or scalars) or a creation
    function; read it back with ``numpy.asarray(x)``, ``x.get()`` or ``float(x)``.
    """

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100  # NumPy defers to our reflected operators

    def __init__(self, native: Any) -> None:
        if not isinstance(native, _native.Array):
            raise TypeError("use suanli.numpy.asarray(...) to make an array")
        self._a = native

    # -- attributes -------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._a.shape)

    @property
    def dtype(self) -> _np.dtype:
        return DTYPES[self._a.dtype_name]

    @property
    def ndim(self) -> int:
        return len(self._a.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self._a.shape:
            n *= d
        return n

    @property
    def device(self) -> Device:
        return self._a.device

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def T(self) -> "ndarray":
        if self.ndim != 2:
            raise ValueError(f"x.T needs a 2-D array (use permute_dims); found {self.ndim}-D")
        return ndarray(self._a.permute_dims([1, 0]))

    @property
    def mT(self) -> "ndarray":
        if self.ndim < 2:
            raise ValueError(f"x.mT needs at least 2 axes; found {self.ndim}")
        axes = list(range(self.ndim))
        axes[-1], axes[-2] = axes[-2], axes[-1]
        return ndarray(self._a.permute_dims(axes))

    def __array_namespace__(self, api_version: Optional[str] = None) -> Any:
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"unsupported array API version {api_version!r}")
        from .. import numpy as xp

        return xp

    # -- host interop -----------------------------------------------------------------------
    def get(self) -> _np.ndarray:
        """The values as a NumPy array (CuPy's ``get``); waits for the device."""
        raw = self._a.to_bytes()
        return _np.frombuffer(raw, dtype=self.dtype).reshape(self.shape).copy()

    def __array__(self, dtype: Any = None, copy: Optional[builtins.bool] = None) -> _np.ndarray:
        if copy is False:
            raise ValueError("a suanli array lives on a device: converting it copies")
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    def to_device(self, device: Any, /, *, stream: Any = None) -> "ndarray":
        if stream is not None:
            raise ValueError("streams are not supported")
        if device is self.device or (isinstance(device, Device) and device.spec == self.device.spec):
            return self
        return ndarray(_native.Array.from_bytes(self._a.to_bytes(), self._a.dtype_name, list(self.shape), device))

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[builtins.bool] = None,
    ) -> Any:
        # A host copy: device memory is not shared with other libraries.
        if copy is False:
            raise BufferError("a suanli array lives on a device: exporting it copies")
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"__dlpack__: only the host copy (kDLCPU) is exported, not {dl_device}")
        kw = {} if max_version is None else {"max_version": max_version}
        return self.get().__dlpack__(**kw)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (1, 0)  # kDLCPU: __dlpack__ hands over a host copy

    def _scalar(self, kind: type) -> Any:
        if self.size != 1:
            raise TypeError(f"only arrays of one element convert to Python scalars; shape {self.shape}")
        return kind(self.get().reshape(()).item())

    def __bool__(self) -> builtins.bool:
        return self._scalar(builtins.bool)

    def __int__(self) -> int:
        return self._scalar(int)

    def __float__(self) -> float:
        return self._scalar(float)

    def __complex__(self) -> complex:
        return self._scalar(complex)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays are indices; found {self.dtype}")
        return self._scalar(int)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        body = _np.array2string(self.get(), separator=", ", prefix="array(")
        return f"array({body}, dtype={self.dtype.name})"

    def __str__(self) -> str:
        return str(self.get())

    # -- indexing ---------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> "ndarray":
        """Basic indices make a view; integer arrays and boolean masks (NumPy's advanced
        indexing) a copy. A mask reads its count back to the host (the result's shape
        depends on it)."""
        return ndarray(self._a.index(_index_entries(key, self.ndim, self)))

    def __setitem__(self, key: Any, value: Any) -> None:
        """Writes through the selection. With repeated positions in an integer array, which
        value stays is unspecified (as in NumPy)."""
        entries = _index_entries(key, self.ndim, self)
        v = self._a.scalar_like(value) if _is_scalar(value) else _operand(value, self)._a
        self._a.setitem(entries, v)

    def nonzero(self) -> Tuple["ndarray", ...]:
        """``nonzero(self)``."""
        from ._set_functions import nonzero

        return nonzero(self)

    # -- operators --------------------------------------------------------------------------
    def _bin(self, name: str, other: Any, reflected: builtins.bool = False) -> "ndarray":
        if _is_scalar(other):
            return ndarray(self._a.binary_scalar(name, other, reflected))
        o = _operand(other, self)
        if reflected:
            return ndarray(o._a.binary(name, self._a))
        return ndarray(self._a.binary(name, o._a))

    def _inplace(self, name: str, other: Any) -> "ndarray":
        result = self._bin(name, other)
        if result.shape != self.shape:
            raise ValueError(
                f"in-place {name}: the result's shape {result.shape} is not the array's {self.shape}"
            )
        self._a.assign(result._a)
        return self

    def __matmul__(self, other: Any) -> "ndarray":
        from .linalg import matmul

        return matmul(self, _operand(other, self))

    def __rmatmul__(self, other: Any) -> "ndarray":
        from .linalg import matmul

        return matmul(_operand(other, self), self)

    def __neg__(self) -> "ndarray":
        return ndarray(self._a.unary("negative"))

    def __pos__(self) -> "ndarray":
        return ndarray(self._a.unary("positive"))

    def __abs__(self) -> "ndarray":
        return ndarray(self._a.unary("abs"))

    def __invert__(self) -> "ndarray":
        return ndarray(self._a.unary("bitwise_invert"))


def _operand(v: Any, like: Optional[ndarray] = None) -> ndarray:
    """An operand as an array on ``like``'s device (NumPy arrays and scalars uploaded)."""
    if isinstance(v, ndarray):
        return v
    from . import asarray

    dev = like.device if like is not None else None
    return asarray(v, device=dev)


_BINARY_OPERATORS = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "pow",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
}


def _install() -> None:
    for op, fn in _BINARY_OPERATORS.items():
        setattr(ndarray, f"__{op}__", lambda self, other, fn=fn: self._bin(fn, other))
        setattr(ndarray, f"__r{op}__", lambda self, other, fn=fn: self._bin(fn, other, True))
        setattr(ndarray, f"__i{op}__", lambda self, other, fn=fn: self._inplace(fn, other))
    for op, fn in {
        "eq": "equal",
        "ne": "not_equal",
        "lt": "less",
        "le": "less_equal",
        "gt": "greater",
        "ge": "greater_equal",
    }.items():
        setattr(ndarray, f"__{op}__", lambda self, other, fn=fn: self._bin(fn, other))


_install()
ndarray.__hash__ = None  # type: ignore[assignment]  (== is elementwise)


def default_device() -> Device:
    return current_device()
