"""``suanli.numpy``: NumPy-style arrays on any GPU, the Python array API standard's namespace.

::

    import suanli.numpy as xp
    u = xp.zeros((256, 256), dtype=xp.float32)
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    numpy_result = xp.asnumpy(u)

Arrays live on one device (``x.device``; the current ``suanli.device`` block's, else the
default). Elementwise operations are queued and fused: the expression runs as one generated
kernel when its values are needed. ``docs/ARRAYS.md`` lists what is supported, per dtype, and
how it differs from NumPy.
"""

from __future__ import annotations

import builtins
import math as _math
import operator
from typing import Any, Optional, Sequence, Tuple

import numpy as _np

from .. import _native
from .._device import Device
from ._array import DTYPES, _dtype_name, _is_scalar, _operand, ndarray
from . import fft, linalg, random  # noqa: F401  (the namespace's submodules)
from .linalg import matmul, vecdot  # noqa: F401
from ._creation import (  # noqa: F401
    _DEFAULT_INT,
    _shape,
    arange,
    asarray,
    asnumpy,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._info import (  # noqa: F401
    __array_namespace_info__,
    can_cast,
    finfo,
    finfo_object,
    iinfo,
    iinfo_object,
    isdtype,
)
from ._einsum import einsum  # noqa: F401
from ._kernels import ElementwiseKernel, ReductionKernel, fuse  # noqa: F401
from ._memory import MemoryPool, get_default_memory_pool  # noqa: F401
from ._set_functions import (  # noqa: F401
    nonzero,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from ._sorting import (  # noqa: F401
    argsort,
    cumulative_prod,
    cumulative_sum,
    searchsorted,
    sort,
    take,
    take_along_axis,
)

__array_api_version__ = "2024.12"

bool = DTYPES["bool"]  # noqa: A001  (the standard's name)
int8 = DTYPES["int8"]
int16 = DTYPES["int16"]
int32 = DTYPES["int32"]
uint8 = DTYPES["uint8"]
uint16 = DTYPES["uint16"]
uint32 = DTYPES["uint32"]
#: int64 and uint64 only on devices with 64-bit integers in shaders (lavapipe, most desktop
#: Vulkan drivers; not Metal or WGPU_BACKEND=gl): elsewhere creating one is a TypeError.
#: The default integer stays int32 everywhere (``asarray([1, 2])``, ``arange(3)``).
int64 = DTYPES["int64"]
uint64 = DTYPES["uint64"]
float16 = DTYPES["float16"]
float32 = DTYPES["float32"]
#: Only on devices with f64 and 64-bit integers in shaders (lavapipe, most desktop Vulkan
#: drivers; not Metal or WGPU_BACKEND=gl): elsewhere creating a float64 array is a TypeError.
float64 = DTYPES["float64"]
complex64 = DTYPES["complex64"]

e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None

_UNARY = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "cos",
    "cosh", "exp", "expm1", "floor", "isfinite", "isinf", "isnan", "log", "log1p", "log2",
    "log10", "logical_not", "negative", "positive", "round", "sign", "signbit", "sin", "sinh",
    "sqrt", "square", "tan", "tanh", "trunc",
)
_BINARY = (
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal",
    "hypot", "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract",
)
# NumPy's other names for the same functions.
_ALIASES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "invert": "bitwise_invert",
    "arctan2": "atan2", "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
    "power": "pow", "true_divide": "divide", "mod": "remainder", "fmax": "maximum",
    "fmin": "minimum",
}


def meshgrid(*arrays: ndarray, indexing: str = "xy") -> list:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', found {indexing!r}")
    n = len(arrays)
    shape = [a.size for a in arrays]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        s = [1] * n
        j = i
        if indexing == "xy" and n >= 2 and i < 2:
            j = 1 - i
        s[j] = a.size
        out.append(broadcast_to(reshape(a, tuple(s)), tuple(shape)))
    return out


# -- elementwise ------------------------------------------------------------------------------
def _make_unary(name: str):
    def f(x: ndarray, /) -> ndarray:
        return ndarray(_operand(x)._a.unary(name))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``{name}(x)``, elementwise (the array API standard's function)."
    return f


def _make_binary(name: str):
    def f(x1: Any, x2: Any, /) -> ndarray:
        if isinstance(x1, ndarray) or not _is_scalar(x1):
            a = _operand(x1, x2 if isinstance(x2, ndarray) else None)
            return a._bin(name, x2)
        if _is_scalar(x2):
            raise TypeError(f"{name}: at least one argument must be an array")
        return _operand(x2)._bin(name, x1, True)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``{name}(x1, x2)``, elementwise with broadcasting; either may be a Python scalar."
    return f


for _n in _UNARY:
    globals()[_n] = _make_unary(_n)
for _n in _BINARY:
    globals()[_n] = _make_binary(_n)
for _alias, _n in _ALIASES.items():
    globals()[_alias] = globals()[_n]


def where(condition: Any, x1: Any, x2: Any, /) -> ndarray:
    """``x1`` where ``condition`` is true, else ``x2`` (broadcast; either may be a Python
    scalar, which takes the other's dtype)."""
    like = next((v for v in (condition, x1, x2) if isinstance(v, ndarray)), None)
    c = _operand(condition, like)
    a = None if _is_scalar(x1) else _operand(x1, like)._a
    b = None if _is_scalar(x2) else _operand(x2, like)._a
    if a is None and b is None:
        a = asarray(x1, device=c.device)._a
    if a is None:
        a = b.scalar_like(x1)
    if b is None:
        b = a.scalar_like(x2)
    return ndarray(_native.Array.where_(c._a, a, b))


def clip(x: ndarray, /, min: Any = None, max: Any = None) -> ndarray:  # noqa: A002
    out = x
    if min is not None:
        out = where(less(out, min), min, out) if not isinstance(min, ndarray) else maximum(out, min)
    if max is not None:
        out = where(greater(out, max), max, out) if not isinstance(max, ndarray) else minimum(out, max)
    return astype(out, x.dtype)


def astype(x: ndarray, dtype: Any, /, *, copy: builtins.bool = True, device: Optional[Device] = None) -> ndarray:
    if device is not None:
        x = x.to_device(device)
    name = _dtype_name(dtype)
    if name == x.dtype.name:
        return ndarray(x._a.copy()) if copy else x
    return ndarray(x._a.astype(name))


# -- reductions ---------------------------------------------------------------------------------
def _axes(axis: Any) -> Optional[list]:
    if axis is None:
        return None
    if isinstance(axis, (int, _np.integer)):
        return [int(axis)]
    return [int(a) for a in axis]


def _reduction(name: str):
    def f(x: ndarray, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> ndarray:
        # With ``dtype`` the values are cast first and accumulated in it, as NumPy does:
        # casting the result afterwards would give a float64 sum computed in float32.
        if dtype is not None:
            x = astype(x, dtype, copy=False)
        r = ndarray(x._a.reduce(name, _axes(axis), keepdims))
        return astype(r, dtype, copy=False) if dtype is not None else r

    f.__name__ = f.__qualname__ = name
    return f


sum = _reduction("sum")  # noqa: A001
prod = _reduction("prod")


def _minmax(name: str):
    def f(x: ndarray, /, *, axis: Any = None, keepdims: builtins.bool = False) -> ndarray:
        return ndarray(x._a.reduce(name, _axes(axis), keepdims))

    f.__name__ = f.__qualname__ = name
    return f


min = _minmax("min")  # noqa: A001
max = _minmax("max")  # noqa: A001
any = _minmax("any")  # noqa: A001
all = _minmax("all")  # noqa: A001


def argmin(x: ndarray, /, *, axis: Optional[int] = None, keepdims: builtins.bool = False) -> ndarray:
    return ndarray(x._a.reduce("argmin", None if axis is None else [int(axis)], keepdims))


def argmax(x: ndarray, /, *, axis: Optional[int] = None, keepdims: builtins.bool = False) -> ndarray:
    return ndarray(x._a.reduce("argmax", None if axis is None else [int(axis)], keepdims))


def mean(x: ndarray, /, *, axis: Any = None, keepdims: builtins.bool = False) -> ndarray:
    return ndarray(x._a.mean(_axes(axis), keepdims))


def var(x: ndarray, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False) -> ndarray:
    return ndarray(x._a.var(_axes(axis), float(correction), keepdims))


def std(x: ndarray, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False) -> ndarray:
    return ndarray(x._a.std(_axes(axis), float(correction), keepdims))


# -- manipulation --------------------------------------------------------------------------------
def reshape(x: ndarray, /, shape: Any, *, copy: Optional[builtins.bool] = None) -> ndarray:
    r = ndarray(x._a.reshape(_shape(shape)))
    return ndarray(r._a.copy()) if copy else r


def permute_dims(x: ndarray, /, axes: Sequence[int]) -> ndarray:
    n = x.ndim
    return ndarray(x._a.permute_dims([int(a) % n if n else int(a) for a in axes]))


def matrix_transpose(x: ndarray, /) -> ndarray:
    return x.mT


def _norm_axis(axis: int, n: int, name: str) -> int:
    if not -n <= axis < n:
        raise IndexError(f"{name}: axis {axis} is out of range for {n} axes")
    return axis % n


def expand_dims(x: ndarray, /, axis: int = 0) -> ndarray:
    return ndarray(x._a.expand_dims(_norm_axis(int(axis), x.ndim + 1, "expand_dims")))


def squeeze(x: ndarray, /, axis: Any) -> ndarray:
    axes = sorted({_norm_axis(a, x.ndim, "squeeze") for a in _axes(axis)})
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has extent {x.shape[a]}, not 1")
    return ndarray(x._a.squeeze(axes))


def broadcast_to(x: ndarray, /, shape: Any) -> ndarray:
    return ndarray(x._a.broadcast_to(_shape(shape)))


def broadcast_shapes(*shapes: Sequence[int]) -> Tuple[int, ...]:
    return _np.broadcast_shapes(*shapes)


def broadcast_arrays(*arrays: ndarray) -> list:
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def flip(x: ndarray, /, *, axis: Any = None) -> ndarray:
    axes = range(x.ndim) if axis is None else [_norm_axis(a, x.ndim, "flip") for a in _axes(axis)]
    key = [slice(None)] * x.ndim
    for a in axes:
        key[a] = slice(None, None, -1)
    return x[tuple(key)]


def result_type(*arrays_and_dtypes: Any) -> _np.dtype:
    from ._promotion import result_type as rt

    return rt(*arrays_and_dtypes)


def concat(arrays: Sequence[ndarray], /, *, axis: Optional[int] = 0) -> ndarray:
    arrays = [_operand(a) for a in arrays]
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    first = arrays[0]
    ax = _norm_axis(int(axis), first.ndim, "concat")
    for a in arrays[1:]:
        if a.ndim != first.ndim or builtins.any(
            a.shape[i] != first.shape[i] for i in range(first.ndim) if i != ax
        ):
            raise ValueError(f"concat: shapes {first.shape} and {a.shape} differ off axis {ax}")
    shape = list(first.shape)
    shape[ax] = builtins.sum(a.shape[ax] for a in arrays)
    out = empty(tuple(shape), dtype=result_type(*arrays), device=first.device)
    at = 0
    for a in arrays:
        key = [slice(None)] * len(shape)
        key[ax] = slice(at, at + a.shape[ax])
        out[tuple(key)] = a
        at += a.shape[ax]
    return out


def stack(arrays: Sequence[ndarray], /, *, axis: int = 0) -> ndarray:
    arrays = [_operand(a) for a in arrays]
    ax = _norm_axis(int(axis), arrays[0].ndim + 1, "stack")
    return concat([expand_dims(a, axis=ax) for a in arrays], axis=ax)


def roll(x: ndarray, /, shift: Any, *, axis: Any = None) -> ndarray:
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, axis=0), x.shape)
    shifts = [shift] * len(_axes(axis)) if isinstance(shift, int) else list(shift)
    out = x
    for s, a in zip(shifts, _axes(axis)):
        a = _norm_axis(a, x.ndim, "roll")
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s == 0:
            continue
        head = [slice(None)] * x.ndim
        tail = [slice(None)] * x.ndim
        head[a] = slice(n - s, None)
        tail[a] = slice(None, n - s)
        out = concat([out[tuple(head)], out[tuple(tail)]], axis=a)
    return out


def moveaxis(x: ndarray, source: Any, destination: Any, /) -> ndarray:
    src = [_norm_axis(a, x.ndim, "moveaxis") for a in _axes(source)]
    dst = [_norm_axis(a, x.ndim, "moveaxis") for a in _axes(destination)]
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def unstack(x: ndarray, /, *, axis: int = 0) -> Tuple[ndarray, ...]:
    """Views of ``x`` along ``axis``, one per position."""
    ax = _norm_axis(int(axis), x.ndim, "unstack")
    key = [slice(None)] * x.ndim
    out = []
    for i in range(x.shape[ax]):
        key[ax] = i
        out.append(x[tuple(key)])
    return tuple(out)


def tile(x: ndarray, repetitions: Sequence[int], /) -> ndarray:
    """``x`` repeated ``repetitions[i]`` times along each axis (a broadcast view, copied once)."""
    reps = [int(r) for r in repetitions]
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be >= 0, found {tuple(reps)}")
    n = builtins.max(x.ndim, len(reps))
    reps = [1] * (n - len(reps)) + reps
    shape = [1] * (n - x.ndim) + list(x.shape)
    # (r0, s0, r1, s1, ...) from a view of shape (1, s0, 1, s1, ...), then merged pairwise.
    inter = []
    wide = []
    for r, d in zip(reps, shape):
        inter += [1, d]
        wide += [r, d]
    v = broadcast_to(reshape(x, tuple(inter)), tuple(wide))
    return reshape(v, tuple(r * d for r, d in zip(reps, shape)))


def repeat(x: ndarray, repeats: Any, /, *, axis: Optional[int] = None) -> ndarray:
    """Each element repeated ``repeats`` times along ``axis`` (the flattened array when None).
    ``repeats`` is an integer, or an integer array (or sequence) of one count or one per
    element. Per-element counts make a data-dependent shape, so the counts are read back;
    the positions are then found on the device (``searchsorted`` of each output position in
    the counts' running sum) and gathered with ``take``."""
    if not isinstance(repeats, (int, ndarray)):
        repeats = asarray(repeats, dtype=int32, device=x.device)
    if isinstance(repeats, ndarray):
        if repeats.dtype.kind not in "iu":
            raise TypeError(f"repeat: repeats must be integers, found {repeats.dtype}")
        counts = repeats.get().reshape(-1)  # a data-dependent shape: the counts are read
        m = x.size if axis is None else x.shape[_norm_axis(int(axis), x.ndim, "repeat")]
        if repeats.ndim > 1 or counts.size not in (1, m):
            raise ValueError(f"repeat: repeats must have shape (1,) or ({m},), found {repeats.shape}")
        if (counts < 0).any():
            raise ValueError(f"repeat: repeats must be >= 0, found {int(counts.min())}")
        if counts.size > 1 and (counts != counts[0]).any():
            if axis is None:
                x = reshape(x, (-1,))
                axis = 0
            total = int(counts.astype(_np.int64).sum())
            if total > _np.iinfo(_np.int32).max:
                raise ValueError(f"repeat: {total} elements is past the int32 positions this library indexes")
            ends = cumulative_sum(astype(reshape(repeats, (-1,)), int32))
            where = searchsorted(ends, arange(total, dtype=int32, device=x.device), side="right")
            return take(x, where, axis=_norm_axis(int(axis), x.ndim, "repeat"))
        repeats = int(counts[0]) if counts.size else 0
    if repeats < 0:
        raise ValueError(f"repeat: repeats must be >= 0, found {repeats}")
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    ax = _norm_axis(int(axis), x.ndim, "repeat")
    shape = list(x.shape)
    v = expand_dims(x, axis=ax + 1)
    wide = shape[: ax + 1] + [repeats] + shape[ax + 1:]
    out = shape[:ax] + [shape[ax] * repeats] + shape[ax + 1:]
    return reshape(broadcast_to(v, tuple(wide)), tuple(out))


def diff(
    x: ndarray,
    /,
    *,
    axis: int = -1,
    n: int = 1,
    prepend: Optional[ndarray] = None,
    append: Optional[ndarray] = None,
) -> ndarray:
    """The ``n``-th forward difference along ``axis`` (after ``prepend`` and ``append``)."""
    ax = _norm_axis(int(axis), x.ndim, "diff")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: n must be >= 0, found {n}")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat([astype(_operand(p, x), x.dtype, copy=False) for p in parts], axis=ax)
    lo = [slice(None)] * x.ndim
    hi = [slice(None)] * x.ndim
    lo[ax] = slice(None, -1)
    hi[ax] = slice(1, None)
    for _ in range(n):
        if x.dtype.kind == "b":
            x = not_equal(x[tuple(hi)], x[tuple(lo)])
        else:
            x = subtract(x[tuple(hi)], x[tuple(lo)])
    return x


def count_nonzero(x: ndarray, /, *, axis: Any = None, keepdims: builtins.bool = False) -> ndarray:
    """How many elements are not zero (not False), over ``axis``, as the index dtype."""
    return sum(astype(x, "bool", copy=False), axis=axis, keepdims=keepdims, dtype=_DEFAULT_INT)


def reciprocal(x: ndarray, /) -> ndarray:
    """``1 / x`` elementwise (a floating-point result)."""
    return _operand(x)._bin("divide", 1.0, True)


def real(x: ndarray, /) -> ndarray:
    """The real part (float32 of a complex64 array; a real array itself)."""
    if x.dtype.kind == "b":
        raise TypeError("real: expected a numeric dtype, found bool")
    return ndarray(x._a.unary("real")) if x.dtype.kind == "c" else x


def imag(x: ndarray, /) -> ndarray:
    """The imaginary part (float32 of a complex64 array; zeros of a real one)."""
    if x.dtype.kind == "b":
        raise TypeError("imag: expected a numeric dtype, found bool")
    return ndarray(x._a.unary("imag")) if x.dtype.kind == "c" else zeros_like(x)


def conj(x: ndarray, /) -> ndarray:
    """The complex conjugate (a real array itself)."""
    if x.dtype.kind == "b":
        raise TypeError("conj: expected a numeric dtype, found bool")
    return ndarray(x._a.unary("conj")) if x.dtype.kind == "c" else x


def tensordot(x1: ndarray, x2: ndarray, /, *, axes: Any = 2) -> ndarray:
    """The contraction of ``x1`` and ``x2`` over ``axes`` (the last ``axes`` of ``x1`` with
    the first of ``x2``, or two sequences of axes): a matmul of the two, each permuted and
    reshaped to a matrix (integers: an exact sum of products)."""
    x1 = _operand(x1, x2 if isinstance(x2, ndarray) else None)
    x2 = _operand(x2, x1)
    if isinstance(axes, (int, _np.integer)):
        k = int(axes)
        if k < 0 or k > builtins.min(x1.ndim, x2.ndim):
            raise ValueError(f"tensordot: axes must be in 0..{builtins.min(x1.ndim, x2.ndim)}, found {k}")
        a1 = list(range(x1.ndim - k, x1.ndim))
        a2 = list(range(k))
    else:
        a1, a2 = (
            [_norm_axis(int(a), x.ndim, "tensordot") for a in ([ax] if isinstance(ax, (int, _np.integer)) else ax)]
            for ax, x in zip(axes, (x1, x2))
        )
        if len(a1) != len(a2) or len(set(a1)) != len(a1) or len(set(a2)) != len(a2):
            raise ValueError(f"tensordot: axes {axes} must be two sequences of as many distinct axes")
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(
                f"tensordot: contracted axes differ ({x1.shape[i]} on axis {i} of x1, "
                f"{x2.shape[j]} on axis {j} of x2)"
            )
    free1 = [a for a in range(x1.ndim) if a not in a1]
    free2 = [a for a in range(x2.ndim) if a not in a2]
    m = _math.prod(x1.shape[a] for a in free1)
    kk = _math.prod(x1.shape[a] for a in a1)
    n = _math.prod(x2.shape[a] for a in free2)
    out_shape = tuple(x1.shape[a] for a in free1) + tuple(x2.shape[a] for a in free2)
    dt = result_type(x1, x2)
    a = reshape(permute_dims(x1, free1 + a1), (m, kk))
    b = reshape(permute_dims(x2, a2 + free2), (kk, n))
    if dt.kind == "b":
        raise TypeError("tensordot: expected numeric dtypes, found bool")
    if kk == 0:
        return zeros(out_shape, dtype=dt, device=x1.device)
    if dt.kind == "f":
        r = matmul(a, b)
    else:
        r = astype(sum(multiply(a[:, :, None], b[None, :, :]), axis=1), dt, copy=False)
    return reshape(r, out_shape)
