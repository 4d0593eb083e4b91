"""The norms of int64 and uint64 (``vector_norm``, ``matrix_norm``, ``linalg.norm``): in
float64 where the device holds it (NumPy's result dtype, exact where float32 would round
entries above 2^24), in float32 on a device with 64-bit integers but no float64 (where
they raised TypeError while the float64 path was taken unconditionally)."""

import math

import numpy as np
import pytest

import suanli.numpy as xp
from suanli.numpy import linalg as sl

DT = xp.__array_namespace_info__().dtypes()
pytestmark = pytest.mark.skipif("int64" not in DT, reason="the device has no int64")

B = 1 << 30
# float32 rounds 2^30 + 1 and 2^30 + 2 to 2^30: every norm below would be off by ≥ 1.
A = np.array([[B + 1, -3], [3, B + 2]], dtype=np.int64)

CASES = [
    ("vector_norm", {}),
    ("vector_norm", {"ord": 1}),
    ("vector_norm", {"ord": math.inf}),
    ("vector_norm", {"ord": -math.inf}),
    ("vector_norm", {"axis": 1, "ord": 1}),
    ("matrix_norm", {}),
    ("matrix_norm", {"ord": 1}),
    ("matrix_norm", {"ord": -1}),
    ("matrix_norm", {"ord": math.inf}),
    ("matrix_norm", {"ord": -math.inf}),
    ("norm", {}),
    ("norm", {"ord": 1}),
    ("norm", {"axis": 0, "ord": 2}),
]


def want(name, kw, a):
    f = a.astype(np.float64)
    if name == "vector_norm":
        axis = kw.get("axis")
        return np.linalg.norm(f.reshape(-1) if axis is None else f, ord=kw.get("ord", 2), axis=axis)
    if name == "matrix_norm":
        return np.linalg.norm(f, ord=kw.get("ord", "fro"), axis=(-2, -1))
    return np.linalg.norm(f, **kw)


@pytest.mark.skipif("float64" not in DT, reason="the device has no float64")
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("name,kw", CASES)
def test_wide_integer_norms_in_float64(name, kw, dtype):
    a = np.abs(A).astype(dtype) if dtype == "uint64" else A
    got = np.asarray(getattr(xp.linalg, name)(xp.asarray(a), **kw))
    w = want(name, kw, a)
    assert got.dtype == np.float64
    # Sums of integers below 2^53 are exact; the 2-norms within a few ulps.
    np.testing.assert_allclose(got, w, rtol=1e-15, atol=0)


@pytest.mark.parametrize("name,kw", CASES)
def test_wide_integer_norms_in_float32_without_float64(name, kw, monkeypatch):
    # As on an adapter with 64-bit integers but no f64: float32, as before float64 was held.
    monkeypatch.setattr(sl, "_has_float64", lambda x: False)
    got = np.asarray(getattr(xp.linalg, name)(xp.asarray(A), **kw))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want(name, kw, A), rtol=1e-6, atol=0)
