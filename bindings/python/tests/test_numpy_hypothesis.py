"""Property tests of ``suanli.numpy`` against NumPy, driven by hypothesis.

Every case draws its shapes (0-d and empty ones included), dtypes and values, builds the
operands as views that are not contiguous (slices with steps, reversed axes, transposes) as
often as contiguous arrays, and compares with NumPy: in float64 for floating results (the
inputs are the same float32 values), in the operands' own dtype for integer and boolean
results (the device wraps narrow integers as NumPy does). Covered: every elementwise
function of the namespace on every dtype it takes, binary functions with broadcasting in
every position and Python scalars on either side, ``where``, ``astype``, the reductions over
random axes with ``keepdims``, and ``matmul`` with broadcast batch axes and 1-D operands.

The example counts keep the file near ten seconds on lavapipe; each distinct expression
compiles one kernel, so the counts, not the array sizes, set the time. The examples are
derandomized (the same every run); ``SUANLI_HYPOTHESIS_EXPLORE=1`` draws ten times as many
fresh ones.
"""

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import suanli.numpy as xp

DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32"]

# Functions whose result is float32 whatever the input (the standard's float functions;
# integer inputs are converted first).
FLOAT_RESULT = {
    "sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "divide", "atan2",
    "copysign", "hypot", "logaddexp", "nextafter",
}
BOOL_RESULT = {
    "isnan", "isinf", "isfinite", "signbit", "logical_not", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
}
NUMERIC_ONLY = {
    "negative", "positive", "abs", "sign", "square", "floor", "ceil", "round", "trunc", "add",
    "subtract", "multiply", "floor_divide", "remainder", "pow", "maximum", "minimum",
}
# Where a float function is defined (inputs are drawn there; outside it both give NaN, which
# the special-value tests of the Rust suite cover).
DOMAIN = {
    "sqrt": (0.0, 1e4), "log": (1e-3, 1e4), "log2": (1e-3, 1e4), "log10": (1e-3, 1e4),
    "log1p": (-0.99, 1e4), "acosh": (1.0, 1e3), "asin": (-1.0, 1.0), "acos": (-1.0, 1.0),
    "atanh": (-0.99, 0.99), "exp": (-80.0, 80.0), "expm1": (-80.0, 80.0), "sinh": (-80.0, 80.0),
    "cosh": (-80.0, 80.0), "tan": (-1.5, 1.5),
}
NP_NAME = {
    "pow": "power", "atan2": "arctan2", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "bitwise_invert": "invert",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
}
# Relative tolerance of float results against the float64 reference rounded to float32:
# what WGSL rounds (nearly) correctly, and the transcendental functions (8 ulp).
EXACT = {"add", "subtract", "multiply", "negative", "positive", "abs", "square", "floor",
         "ceil", "round", "trunc", "maximum", "minimum", "copysign", "sign"}

# Derandomized by default, so a CI run is reproducible; SUANLI_HYPOTHESIS_EXPLORE=1 draws
# fresh random examples, ten times as many.
EXPLORE = bool(os.environ.get("SUANLI_HYPOTHESIS_EXPLORE"))


def cfg(n):
    return settings(
        max_examples=n * (10 if EXPLORE else 1),
        derandomize=not EXPLORE,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def takes(name, dtype):
    """Whether the standard (and so suanli.numpy) defines ``name`` on ``dtype``."""
    kind = np.dtype(dtype).kind
    if name in NUMERIC_ONLY and kind == "b":
        return False
    if name == "signbit":
        return kind == "f"
    if name in ("bitwise_invert", "bitwise_and", "bitwise_or", "bitwise_xor"):
        return kind != "f"
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        return kind in "iu"
    return True


def result_dtype(name, *dtypes):
    if name in BOOL_RESULT:
        return np.dtype("bool")
    if name in FLOAT_RESULT:
        return np.dtype("float32")
    return xp.result_type(*dtypes)


def computed(h):
    """Host values as the device computes a float result from them: converted to float32
    (int32 values past 2^24 round), then widened to float64 for NumPy's reference."""
    return np.asarray(h).astype(np.float32).astype(np.float64)


def np_ref(name, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(np, NP_NAME.get(name, name))(*args)


# -- values and views ---------------------------------------------------------------------
def elements(dtype, name=None, role=0):
    """Values for ``dtype``, within ``name``'s domain (``role``: which operand)."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return st.booleans()
    if d.kind in "iu":
        info = np.iinfo(d)
        lo, hi = int(info.min), int(info.max)
        if name == "pow":
            return st.integers(max(lo, -3), min(hi, 3)) if role == 0 else st.integers(0, 5)
        if name in ("bitwise_left_shift", "bitwise_right_shift") and role == 1:
            return st.integers(0, d.itemsize * 8 + 2)
        if name in ("multiply", "square"):
            return st.integers(max(lo, -300), min(hi, 300))
        return st.integers(lo, hi)
    lo, hi = DOMAIN.get(name, (-1e3, 1e3))
    if name == "pow":
        lo, hi = (0.25, 8.0) if role == 0 else (-4.0, 4.0)
    # (Bounds as float32 values, nudged inward: hypothesis wants them exact.)
    lo32, hi32 = np.float32(lo), np.float32(hi)
    lo32 = lo32 if lo32 >= lo else np.nextafter(lo32, np.float32(np.inf))
    hi32 = hi32 if hi32 <= hi else np.nextafter(hi32, np.float32(-np.inf))
    return st.floats(float(lo32), float(hi32), width=32, allow_subnormal=False)


def int_elements_for_float_fn(dtype, name):
    """Integer inputs of a float function, inside its domain."""
    lo, hi = DOMAIN.get(name, (-1e3, 1e3))
    info = np.iinfo(dtype)
    return st.integers(max(math.ceil(lo), int(info.min)), min(math.floor(hi), int(info.max)))


@st.composite
def views(draw, shape, dtype, elems):
    """A NumPy array of ``shape`` and the same values as a suanli array, made as a view:
    contiguous, or a slice with steps (negative too) of a larger array, then perhaps with its
    axes permuted (a transpose)."""
    nd = len(shape)
    perm = list(range(nd))
    if nd >= 2 and draw(st.booleans()):
        perm = draw(st.permutations(range(nd)))
    # The base is laid out in the permuted order; the view permutes it back.
    pshape = [shape[p] for p in perm]
    steps = [draw(st.sampled_from([1, 1, 2, -1, -2])) for _ in pshape]
    offs = [draw(st.integers(0, 1)) for _ in pshape]
    base_shape = tuple(d * abs(s) + o for d, s, o in zip(pshape, steps, offs))
    base = draw(hnp.arrays(np.dtype(dtype), base_shape, elements=elems))
    key = []
    for d, s, o in zip(pshape, steps, offs):
        if d == 0:
            key.append(slice(0, 0))
        elif s > 0:
            key.append(slice(o, o + d * s, s))
        else:  # from element d|s| - 1 down to the start; the last o elements are skipped
            key.append(slice(d * abs(s) - 1, None, s))
    key = tuple(key)
    inv = list(np.argsort(perm))
    host = base[key].transpose(inv) if nd else base
    dev = xp.asarray(base)[key] if nd else xp.asarray(base)
    if nd:
        dev = xp.permute_dims(dev, inv)
    assert host.shape == tuple(shape) and dev.shape == tuple(shape), (host.shape, dev.shape, shape)
    return host, dev


shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


def check(got, want, dtype, name=""):
    """``got`` (a suanli array) against ``want`` (NumPy, float64 for float results)."""
    out = np.asarray(got)
    assert out.dtype == np.dtype(dtype), (name, out.dtype, dtype)
    assert out.shape == np.shape(want), (name, out.shape, np.shape(want))
    if out.dtype.kind == "f":
        want = np.asarray(want, dtype=np.float64)
        rtol = 3e-7 if name in EXACT else 1e-6
        if name == "nextafter":
            np.testing.assert_array_equal(out, want.astype(np.float32), err_msg=name)
            return
        if name in ("pow", "sinh", "cosh", "exp", "expm1"):
            rtol = 4e-6
        # Rounded to float32 first: a result past float32's range is infinite on both sides.
        with np.errstate(over="ignore"):
            want32 = want.astype(np.float32).astype(np.float64)
        np.testing.assert_allclose(out, want32, rtol=rtol, atol=2e-7, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(out, np.asarray(want).astype(out.dtype), err_msg=name)


# -- elementwise ----------------------------------------------------------------------------
UNARY = sorted(xp._UNARY)
BINARY = sorted(xp._BINARY)


@cfg(250)
@given(data=st.data(), name=st.sampled_from(UNARY), dtype=st.sampled_from(DTYPES), shape=shapes)
def test_unary_functions(data, name, dtype, shape):
    assume(takes(name, dtype))
    if name in DOMAIN and np.dtype(dtype).kind in "iu":
        elems = int_elements_for_float_fn(dtype, name)
    else:
        elems = elements(dtype, name)
    host, dev = data.draw(views(shape, dtype, elems))
    got = getattr(xp, name)(dev)
    out = result_dtype(name, dev.dtype)
    src = computed(host) if out.kind == "f" or host.dtype.kind == "f" else host
    check(got, np_ref(name, src), out, name)


@st.composite
def two_operands(draw, name):
    d1 = draw(st.sampled_from([d for d in DTYPES if takes(name, d)]))
    # Mixed dtypes that promote (the standard's table; uint32 with a signed type needs int64).
    d2 = draw(st.sampled_from([d for d in DTYPES if takes(name, d)]))
    try:
        xp.result_type(d1, d2)
    except TypeError:
        d2 = d1
    if name in ("bitwise_left_shift", "bitwise_right_shift", "pow") and d1 != d2:
        d2 = d1  # the count's range is drawn for the first operand's width
    bs = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4))
    s1, s2 = bs.input_shapes
    h1, x1 = draw(views(s1, d1, elements(d1, name, 0)))
    h2, x2 = draw(views(s2, d2, elements(d2, name, 1)))
    return h1, x1, h2, x2


@cfg(400)
@given(data=st.data(), name=st.sampled_from(BINARY))
def test_binary_functions_with_broadcasting(data, name):
    h1, x1, h2, x2 = data.draw(two_operands(name))
    if name in ("floor_divide", "remainder") and np.dtype(h2.dtype).kind in "iu":
        # Integer division by zero is 0 in both, with a NumPy warning: drawn apart from it.
        assume(not (h2 == 0).any())
    got = getattr(xp, name)(x1, x2)
    out = result_dtype(name, x1.dtype, x2.dtype)
    if name == "nextafter":  # one float32 step: the reference steps in float32 too
        want = np.nextafter(h1.astype(np.float32), h2.astype(np.float32))
    elif out.kind == "f" or h1.dtype.kind == "f" or h2.dtype.kind == "f":
        want = np_ref(name, computed(h1), computed(h2))
    else:
        ct = xp.result_type(x1.dtype, x2.dtype)  # both converted to the promoted dtype first
        want = np_ref(name, h1.astype(ct), h2.astype(ct))
    check(got, want, out, name)


@cfg(150)
@given(data=st.data(), name=st.sampled_from(["add", "subtract", "multiply", "maximum", "less",
                                            "equal", "divide", "pow", "bitwise_and"]),
       dtype=st.sampled_from(DTYPES), shape=shapes, reflected=st.booleans())
def test_python_scalars_on_either_side(data, name, dtype, shape, reflected):
    assume(takes(name, dtype))
    kind = np.dtype(dtype).kind
    if kind == "b":
        scalar = data.draw(st.booleans())
    elif kind in "iu" or name == "bitwise_and":
        info = np.iinfo(dtype)
        scalar = data.draw(st.integers(max(int(info.min), -5 if name == "pow" else -100),
                                       min(int(info.max), 5 if name == "pow" else 100)))
        if name == "pow":
            scalar = abs(scalar)
    else:
        scalar = data.draw(st.floats(0.5, 4.0) if name == "pow" else st.floats(-100, 100, width=32))
    host, dev = data.draw(views(shape, dtype, elements(dtype, name, 1 if reflected else 0)))
    if name == "pow" and reflected and kind in "iu":
        assume((host >= 0).all())
    f = getattr(xp, name)
    got = f(scalar, dev) if reflected else f(dev, scalar)
    # The scalar takes the array's dtype (NumPy 2's rule); float32 where a float meets an
    # integer or bool array, int32 where an int meets a bool array.
    if isinstance(scalar, float) and kind != "f":
        sd = np.dtype("float32")
    elif isinstance(scalar, int) and not isinstance(scalar, bool) and kind == "b":
        sd = np.dtype("int32")
    else:
        sd = np.dtype(dtype)
    out = result_dtype(name, np.dtype(dtype), sd)
    if out.kind == "f" or kind == "f":
        a, b = computed(host), np.float64(np.float32(scalar))
    else:
        ct = out if name not in BOOL_RESULT else np.int64
        a, b = host.astype(ct), np.asarray(scalar).astype(ct)
    want = np_ref(name, b, a) if reflected else np_ref(name, a, b)
    check(got, want, out, name)


@cfg(120)
@given(data=st.data(), d1=st.sampled_from(DTYPES), d2=st.sampled_from(DTYPES),
       bs=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=4))
def test_where_and_astype(data, d1, d2, bs):
    try:
        out = xp.result_type(d1, d2)
    except TypeError:
        d2 = d1
        out = np.dtype(d1)
    sc, s1, s2 = bs.input_shapes
    hc, c = data.draw(views(sc, "bool", st.booleans()))
    h1, x1 = data.draw(views(s1, d1, elements(d1)))
    h2, x2 = data.draw(views(s2, d2, elements(d2)))
    check(xp.where(c, x1, x2), np.where(hc, h1.astype(out), h2.astype(out)), out, "where")
    # astype to every dtype: floats to integers only where the value fits (NumPy leaves the
    # rest undefined; the device saturates), integers wrap as NumPy's casts do.
    to = data.draw(st.sampled_from(DTYPES))
    if h1.dtype.kind == "f" and np.dtype(to).kind in "iu":
        info = np.iinfo(to)
        assume(((h1 >= info.min) & (h1 <= info.max)).all())
    with np.errstate(all="ignore"):
        check(xp.astype(x1, to), h1.astype(to), np.dtype(to), "astype")


# -- reductions -------------------------------------------------------------------------------
REDUCTIONS = ["sum", "prod", "min", "max", "mean", "var", "std", "any", "all", "argmin", "argmax"]


@cfg(250)
@given(data=st.data(), name=st.sampled_from(REDUCTIONS), dtype=st.sampled_from(DTYPES),
       shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
       keepdims=st.booleans())
def test_reductions_over_random_axes(data, name, dtype, shape, keepdims):
    kind = np.dtype(dtype).kind
    if name in ("mean", "var", "std"):
        assume(kind == "f")
    if name in ("min", "max"):
        assume(kind != "b")
    nd = len(shape)
    if name in ("argmin", "argmax"):
        axis = data.draw(st.none() | (st.integers(-nd, nd - 1) if nd else st.none()))
    else:
        axis = data.draw(st.none() | st.integers(-nd, nd - 1) if nd else st.none())
        if nd and axis is not None and data.draw(st.booleans()):
            axis = tuple(data.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)))
    if name == "prod":
        elems = st.floats(-2.0, 2.0, width=32) if kind == "f" else elements(dtype, "multiply")
    else:
        elems = elements(dtype)
    host, dev = data.draw(views(shape, dtype, elems))
    axes = tuple(range(nd)) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    empty = any(shape[a] == 0 for a in axes) if nd else False
    f = getattr(xp, name)
    kw = {"axis": axis, "keepdims": keepdims}
    if name in ("min", "max", "argmin", "argmax") and (empty or host.size == 0):
        # No identity: both refuse an empty reduction (suanli.numpy gives an empty result
        # where there are no outputs either; NumPy refuses that too).
        if math.prod(shape[a] for a in range(nd) if a not in axes):
            with pytest.raises(ValueError):
                np.asarray(f(dev, **kw))
        return
    if name in ("mean", "var", "std") and (empty or host.size == 0):
        return  # NaN with a NumPy warning; not compared
    got = f(dev, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in ("sum", "prod"):
            if kind == "f":
                want = getattr(np, name)(host.astype(np.float64), **kw)
                check_reduction(got, want, host, axis, keepdims, name)
                return
            acc = np.int32 if kind in "ib" else np.uint32
            want = getattr(np, name)(host.astype(np.int64), **kw).astype(acc)  # wraps as the device does
            check(got, want, np.dtype(acc), name)
        elif name in ("mean", "var", "std"):
            want = getattr(np, name)(host.astype(np.float64), **kw)
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-5, err_msg=name)
            assert np.asarray(got).shape == np.shape(want)
        elif name in ("any", "all"):
            check(got, getattr(np, name)(host, **kw), np.dtype("bool"), name)
        elif name in ("argmin", "argmax"):
            want = getattr(np, name)(host, axis=axis, keepdims=keepdims)
            check(got, want, np.dtype("int32"), name)
        else:
            check(got, getattr(np, name)(host, **kw), np.dtype(dtype), name)


def check_reduction(got, want, host, axis, keepdims, name):
    """A float sum or product: within float32 rounding of the float64 answer, scaled by the
    magnitudes summed (a sum that cancels to ~0 is exact only to its terms' size)."""
    out = np.asarray(got)
    assert out.dtype == np.float32 and out.shape == np.shape(want), (out.dtype, out.shape, np.shape(want))
    if name == "sum":
        scale = np.sum(np.abs(host.astype(np.float64)), axis=axis, keepdims=keepdims)
        assert (np.abs(out - want) <= 1e-6 * scale + 1e-30).all(), (out, want)
    else:
        np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-30, err_msg=name)


# -- matmul --------------------------------------------------------------------------------------
@cfg(120)
@given(data=st.data(), dtype=st.sampled_from(["float32", "float32", "int16", "uint8", "int32"]),
       m=st.integers(1, 6), k=st.integers(1, 6), n=st.integers(1, 6),
       batch=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=3),
       vec=st.sampled_from([None, None, "left", "right", "both"]))
def test_matmul_with_broadcasting(data, dtype, m, k, n, batch, vec):
    b1, b2 = batch.input_shapes
    s1 = (k,) if vec in ("left", "both") else b1 + (m, k)
    s2 = (k,) if vec in ("right", "both") else b2 + (k, n)
    # Integers small enough that every product and sum is exact (and fits uint8).
    elems = st.floats(-2, 2, width=32) if dtype == "float32" else st.integers(0, 3 if dtype == "uint8" else 12)
    h1, x1 = data.draw(views(s1, dtype, elems))
    h2, x2 = data.draw(views(s2, dtype, elems))
    got = x1 @ x2
    want = np.matmul(h1.astype(np.float64), h2.astype(np.float64))
    out = np.asarray(got)
    assert out.dtype == np.dtype(dtype) and out.shape == want.shape, (out.dtype, out.shape, want.shape)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * k)
    # The same through linalg.matmul and the transposed operands (.mT read in place).
    if len(s1) >= 2 and len(s2) >= 2:
        t = xp.linalg.matmul(xp.matrix_transpose(x2), xp.matrix_transpose(x1))
        np.testing.assert_allclose(np.asarray(t), np.swapaxes(want, -1, -2), rtol=1e-5, atol=1e-5 * k)
