"""Kernels of your own over arrays, as CuPy spells them, with WGSL where CuPy takes CUDA C:
``ElementwiseKernel``, ``ReductionKernel`` and the ``fuse`` decorator.

Inputs that are still pending expressions are computed inside the kernel (no temporary),
views are read in place and inputs broadcast together; the generated WGSL is compiled once
per dtypes and rank. A snippet sees only its parameters (and ``i``, the element's position,
and ``n``, the number of elements, in an ``ElementwiseKernel``); WGSL that does not compile
raises ``ValueError`` with naga's message."""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from .. import _native
from ._array import ndarray


def _arguments(params: List[Tuple[str, str, bool]], args: Sequence[Any], what: str) -> List[Any]:
    """The call's arguments as native arrays: a Python scalar or NumPy array takes its
    parameter's dtype (a placeholder's from the first array bound to it)."""
    from . import asarray

    if len(args) != len(params):
        raise TypeError(f"{what}: expected {len(params)} arguments ({', '.join(p[0] for p in params)}), found {len(args)}")
    device = next((a.device for a in args if isinstance(a, ndarray)), None)
    bound = {}
    for (_, ty, generic), a in zip(params, args):
        if generic and isinstance(a, ndarray) and ty not in bound:
            bound[ty] = a.dtype
    out = []
    for (name, ty, generic), a in zip(params, args):
        if not isinstance(a, ndarray):
            dtype = bound.get(ty) if generic else ty
            a = asarray(a, dtype=dtype, device=device)
            if generic:
                bound.setdefault(ty, a.dtype)
        out.append(a._a)
    return out


class ElementwiseKernel:
    """A WGSL snippet run once per element (CuPy's ``ElementwiseKernel``)::

        squared_diff = xp.ElementwiseKernel(
            "T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
        z = squared_diff(a, b)        # broadcast; scalars take the parameter's dtype

    Parameters are ``"TYPE NAME"`` pairs: a dtype name (an input of another dtype is
    converted when that keeps every value) or a placeholder starting with a capital (bound
    by the first input that uses it; every input with it must have that dtype). Outputs
    start at zero; several outputs come back as a tuple. ``bool`` parameters are WGSL
    ``bool``s. Not supported: ``raw`` parameters, ``out=`` arrays, ``size=``."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel", *, preamble: str = "", **options: Any) -> None:
        if options:
            raise TypeError(f"ElementwiseKernel: unsupported options {sorted(options)}")
        self.name = name
        self._k = _native.ElementwiseKernel(in_params, out_params, operation, name, preamble)
        self._params = self._k.inputs()

    def __call__(self, *args: Any) -> Union[ndarray, Tuple[ndarray, ...]]:
        outs = self._k.call(_arguments(self._params, args, self.name))
        arrays = tuple(ndarray(o) for o in outs)
        return arrays[0] if len(arrays) == 1 else arrays

    def __repr__(self) -> str:
        return f"ElementwiseKernel({self.name!r})"


class ReductionKernel:
    """A reduction of your own (CuPy's ``ReductionKernel``)::

        l2norm = xp.ReductionKernel(
            "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        n = l2norm(v, axis=1)

    ``map_expr`` maps each element (WGSL over the input names), ``reduce_expr`` combines two
    mapped values ``a`` and ``b`` (it must be associative and commutative: the order is
    fixed for a shape, so results repeat exactly, but elements are interleaved across
    chunks, not folded left to right), ``post_map_expr`` assigns the
    output from ``a``, and ``identity`` (WGSL) is the value an empty reduction starts from.
    ``reduce_type`` is the type values are mapped to (the output's by default)."""

    def __init__(
        self,
        in_params: str,
        out_params: str,
        map_expr: str,
        reduce_expr: str,
        post_map_expr: str,
        identity: Optional[str],
        name: str = "reduce_kernel",
        reduce_type: Optional[str] = None,
        *,
        preamble: str = "",
        **options: Any,
    ) -> None:
        if options:
            raise TypeError(f"ReductionKernel: unsupported options {sorted(options)}")
        if identity is None:
            raise ValueError("ReductionKernel: an identity is required (the result of an empty reduction)")
        self.name = name
        self._k = _native.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, str(identity), name, reduce_type, preamble)
        self._params = self._k.inputs()

    def __call__(self, *args: Any, axis: Union[None, int, Sequence[int]] = None, keepdims: bool = False) -> ndarray:
        axes = None if axis is None else ([int(axis)] if isinstance(axis, int) else [int(a) for a in axis])
        return ndarray(self._k.call(_arguments(self._params, args, self.name), axes, bool(keepdims)))

    def __repr__(self) -> str:
        return f"ReductionKernel({self.name!r})"


def fuse(*args: Any, **kwargs: Any) -> Callable:
    """CuPy's ``@fuse``: here every elementwise operation is already recorded and fused into
    one kernel when its result is needed (and into the reduction that consumes it), so the
    decorated function runs as written and its elementwise body costs one dispatch. Usable
    as ``@fuse`` and ``@fuse(kernel_name=...)``."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        fn = args[0]
        return functools.wraps(fn)(lambda *a, **k: fn(*a, **k))
    return lambda fn: fuse(fn)
