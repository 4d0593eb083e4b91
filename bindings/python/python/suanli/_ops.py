"""TensorFlow's everyday tensor functions (``tf.constant``, ``tf.nn.softmax``,
``tf.argmax``, ``tf.reduce_mean``, ...) on suanli tensors and anything ``asarray`` takes,
computed on the device by the crate's kernels.

Tensors are float32 (``argmax`` returns float32 indices, exact below 2^24). Reductions and
softmax work over all elements, the first axis or the last axis, the axes the kernels
reduce; another axis raises ``ValueError`` saying so.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _native
from ._device import current_device
from ._native import Tensor

_FLOATS = (None, "float32", "float", "float64", "float16")


def _dtype_name(dtype: Any) -> Optional[str]:
    if dtype is None:
        return None
    return getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)


def convert_to_tensor(value: Any, dtype: Any = None, name: Optional[str] = None) -> Tensor:
    """``value`` (a Tensor, NumPy array, list or number) as a float32 Tensor on the current
    device (a Tensor there already is returned as it is)."""
    if _dtype_name(dtype) not in _FLOATS:
        raise ValueError(f"convert_to_tensor: suanli tensors are float32; found dtype={_dtype_name(dtype)!r}")
    if isinstance(value, Tensor):
        return _native.asarray(value, current_device())
    import numpy as np

    return _native.asarray(np.asarray(value, dtype=np.float32), current_device())


def constant(value: Any, dtype: Any = None, shape: Any = None, name: Optional[str] = None) -> Tensor:
    """``tf.constant``: a float32 Tensor of ``value`` (reshaped to ``shape`` if given)."""
    t = convert_to_tensor(value, dtype)
    if shape is not None:
        t = t.reshape([int(d) for d in shape])
    return t


def _axis(x: Tensor, axis: Optional[int], what: str) -> Optional[int]:
    """``axis`` as 0 (first), -1 (last) or None (all); others refused."""
    if axis is None:
        return None
    rank = len(x.shape)
    a = int(axis)
    if a < 0:
        a += rank
    if not 0 <= a < max(rank, 1):
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of shape {tuple(x.shape)}")
    if a == rank - 1:
        return -1
    if a == 0:
        return 0
    raise ValueError(f"{what}: only the first axis, the last axis or all of them (axis=None) are supported; found axis={axis} of shape {tuple(x.shape)}")


def _reduce(x: Any, axis: Optional[int], keepdims: bool, mean: bool, what: str) -> Tensor:
    x = convert_to_tensor(x)
    shape = list(x.shape)
    n = 1
    for d in shape:
        n *= d
    a = _axis(x, axis, what)
    if a is None:
        out = x.reshape([n, 1])
        out = out.mean(0) if mean else out.sum(0)
        return out.reshape([1] * len(shape) if keepdims else [])
    if a == -1:
        last = shape[-1]
        out = x.reshape([n // last, last])
        out = out.mean(1) if mean else out.sum(1)
        return out.reshape(shape[:-1] + [1] if keepdims else shape[:-1])
    first = shape[0]
    out = x.reshape([first, n // first])
    out = out.mean(0) if mean else out.sum(0)
    return out.reshape([1] + shape[1:] if keepdims else shape[1:])


def reduce_sum(input_tensor: Any, axis: Optional[int] = None, keepdims: bool = False, name: Optional[str] = None) -> Tensor:
    """The sum over ``axis`` (all elements when None)."""
    return _reduce(input_tensor, axis, keepdims, False, "reduce_sum")


def reduce_mean(input_tensor: Any, axis: Optional[int] = None, keepdims: bool = False, name: Optional[str] = None) -> Tensor:
    """The mean over ``axis`` (all elements when None)."""
    return _reduce(input_tensor, axis, keepdims, True, "reduce_mean")


def argmax(input: Any, axis: Optional[int] = None, output_type: Any = None, name: Optional[str] = None) -> Tensor:  # noqa: A002 (TensorFlow's name)
    """The index of the largest value along ``axis`` (TensorFlow's default: axis 0), as
    float32 indices. The last axis of any tensor, or a 1-D tensor's only axis."""
    x = convert_to_tensor(input)
    shape = list(x.shape)
    a = 0 if axis is None else int(axis)
    if a < 0:
        a += len(shape)
    if a != len(shape) - 1:
        raise ValueError(f"argmax: only the last axis is supported; found axis={axis} of shape {tuple(shape)}")
    last = shape[-1]
    n = 1
    for d in shape:
        n *= d
    return x.reshape([n // last, last]).argmax_rows().reshape(shape[:-1])


def softmax(logits: Any, axis: int = -1, name: Optional[str] = None) -> Tensor:
    """Softmax over the last axis."""
    x = convert_to_tensor(logits)
    shape = list(x.shape)
    if _axis(x, axis, "softmax") != -1 and len(shape) > 1:
        raise ValueError(f"softmax: only the last axis is supported; found axis={axis} of shape {tuple(shape)}")
    last = shape[-1]
    n = 1
    for d in shape:
        n *= d
    return x.reshape([n // last, last]).softmax(1).reshape(shape)


def relu(features: Any, name: Optional[str] = None) -> Tensor:
    """max(x, 0)."""
    return convert_to_tensor(features).relu()


def sigmoid(x: Any, name: Optional[str] = None) -> Tensor:
    """1 / (1 + e^-x)."""
    return convert_to_tensor(x).sigmoid()


def tanh(x: Any, name: Optional[str] = None) -> Tensor:
    """tanh(x)."""
    return convert_to_tensor(x).tanh()
