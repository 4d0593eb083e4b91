"""Tensors and CuPy-style raw kernels on the current device."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

from . import _native
from ._device import Device, current_device
from ._native import Tensor


def asarray(a: Any, device: Optional[Device] = None) -> Tensor:
    """``a`` (a NumPy array of any numeric dtype and layout, a list, or a Tensor) as a float32
    tensor on ``device`` (default: the current device). A tensor already there is returned
    as it is; one on another device is copied."""
    return _native.asarray(a, device if device is not None else current_device())


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """The matrix product ``a @ b`` of two 2-D tensors."""
    return a.matmul(b)


def relu(x: Tensor) -> Tensor:
    """max(x, 0), elementwise."""
    return x.relu()


def sum(x: Tensor, axis: int = 0) -> Tensor:  # noqa: A001  (NumPy's name)
    """The sum of a 2-D tensor over ``axis``."""
    return x.sum(axis)


def softmax(x: Tensor, axis: int = 1) -> Tensor:
    """Softmax of a 2-D tensor over ``axis``."""
    return x.softmax(axis)


Grid = Union[int, Tuple[int], Tuple[int, int], Tuple[int, int, int]]


class RawKernel:
    """A WGSL compute kernel of your own, run on suanli tensors (CuPy's ``RawKernel``)::

        k = suanli.RawKernel(source, "saxpy")
        k(n, (x, y, out), uniforms=np.array([n], np.uint32))

    The source is validated by naga before the driver sees it: WGSL errors raise
    ``ValueError`` naming the line and column. Bindings are ``@group(0)``, numbered 0..n;
    tensors fill the storage bindings in order and ``uniforms`` (bytes, a NumPy array or
    scalar, or a list of those) the ``var<uniform>`` ones. The kernel compiles once per
    device; it is compiled on the device of the first tensor of each call.
    """

    def __init__(self, code: str, name: str, device: Optional[Device] = None) -> None:
        self.code = code
        self.name = name
        self._kernels: dict = {}
        dev = device if device is not None else current_device()
        self._default = self._for(dev)

    def _for(self, dev: Device) -> "_native.RawKernel":
        k = self._kernels.get(dev)
        if k is None:
            k = _native.RawKernel(self.code, self.name, dev)
            self._kernels[dev] = k
        return k

    @property
    def bindings(self) -> Sequence[Tuple[str, str]]:
        """(name, access) of each binding, access being "read", "read_write" or "uniform"."""
        return self._default.bindings

    @property
    def workgroup_size(self) -> Tuple[int, int, int]:
        """The entry point's ``@workgroup_size``."""
        return self._default.workgroup_size

    def __call__(self, grid: Grid, args: Sequence[Any], uniforms: Any = None) -> None:
        """Launches over ``grid``: an int is a count of invocations (enough work-groups to
        cover it; past the per-dimension limit they spill onto y), a tuple is work-group
        counts. ``args`` are tensors or ``suanli.numpy`` arrays (the kernel sees an array's
        device words: ``array<u32>``, ``array<i32>`` or ``array<f32>`` as its dtype holds
        them; ``docs/ARRAYS.md``). Returns at once; reading an output waits for it."""
        args = tuple(self._words(a, k) for k, a in enumerate(args))
        first = args[0] if args else None
        k = self._for(first.device) if isinstance(first, Tensor) else self._default
        k(grid, args, uniforms)

    def _words(self, a: Any, k: int) -> Any:
        """A ``suanli.numpy`` array as the tensor of its device words (shared, so the kernel
        writes into the array); a view that does not cover its buffer can only be read, from
        a contiguous copy."""
        from .numpy import asarray, ndarray

        if not isinstance(a, ndarray):
            return a
        w = _native.array_device_words(a._a)
        if w is not None:
            return w
        storage = [b for b in self.bindings if b[1] != "uniform"]
        if k < len(storage) and storage[k][1] == "read_write":
            raise ValueError(
                f"RawKernel {self.name}: argument {k} is a view that does not cover its buffer; "
                "a kernel cannot write through it (pass a contiguous copy: suanli.numpy.asarray(x, copy=True))"
            )
        return _native.array_device_words(asarray(a, copy=True)._a)

    def __repr__(self) -> str:
        return f"RawKernel({self.name!r}, bindings={list(self.bindings)})"
