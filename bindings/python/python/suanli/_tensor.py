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

    def __call__(self, grid: Grid, args: Sequence[Tensor], uniforms: Any = None) -> None:
        """Launches over ``grid``: an int is a count of invocations (enough work-groups to
        cover it; past the per-dimension limit they spill onto y), a tuple is work-group
        counts. Returns at once; reading an output tensor waits for it."""
        args = tuple(args)
        first = args[0] if args else None
        k = self._for(first.device) if isinstance(first, Tensor) else self._default
        k(grid, args, uniforms)

    def __repr__(self) -> str:
        return f"RawKernel({self.name!r}, bindings={list(self.bindings)})"
