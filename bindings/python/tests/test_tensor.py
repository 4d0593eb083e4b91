import numpy as np
import pytest

import suanli

SHAPES = [(1, 1), (3, 5), (7, 13), (33, 65), (130, 7)]


def test_round_trips_of_every_dtype_and_layout(rng):
    for shape in SHAPES:
        a = rng.standard_normal(shape)
        variants = {
            "float64": a,
            "float32": a.astype(np.float32),
            "fortran": np.asfortranarray(a.astype(np.float32)),
            "transposed": a.T.copy().T if a.ndim == 2 else a,
            "strided": np.repeat(a, 2, axis=1)[:, ::2],
            "big-endian": a.astype(">f4"),
            "int64": (a * 10).astype(np.int64),
            "uint8": (np.abs(a) * 40).astype(np.uint8),
            "bool": a > 0,
        }
        for name, v in variants.items():
            got = suanli.asarray(v).numpy()
            assert got.dtype == np.float32 and got.shape == v.shape, name
            np.testing.assert_array_equal(got, np.asarray(v, dtype=np.float32), err_msg=name)
    # 1-D and 3-D keep their shapes; a list works; a Tensor passes through.
    for v in [np.arange(5.0), rng.standard_normal((2, 3, 4)), [[1, 2], [3, 4]]]:
        np.testing.assert_array_equal(suanli.asarray(v).numpy(), np.asarray(v, dtype=np.float32))
    t = suanli.asarray(np.ones((2, 2)))
    assert suanli.asarray(t) is not None and np.asarray(t).shape == (2, 2)


def test_ops_match_numpy_on_ragged_shapes(rng):
    for m, k, n in [(1, 1, 1), (5, 3, 7), (33, 17, 65), (64, 100, 10)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        ta, tb = suanli.asarray(a), suanli.asarray(b)
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose((ta @ tb).numpy(), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(suanli.matmul(ta, tb).numpy(), want, rtol=1e-5, atol=1e-5)
        c = rng.standard_normal((m, k)).astype(np.float32)
        tc = suanli.asarray(c)
        np.testing.assert_allclose((ta + tc).numpy(), a + c, rtol=1e-6)
        np.testing.assert_allclose((ta * tc).numpy(), a * c, rtol=1e-6)
        np.testing.assert_allclose((ta - tc).numpy(), a - c, rtol=1e-6)
        np.testing.assert_allclose((ta * 2.5).numpy(), a * 2.5, rtol=1e-6)
        np.testing.assert_allclose((1.5 + ta).numpy(), a + 1.5, rtol=1e-6)
        row = rng.standard_normal(k).astype(np.float32)
        np.testing.assert_allclose((ta + suanli.asarray(row)).numpy(), a + row, rtol=1e-6)
        np.testing.assert_allclose(suanli.relu(ta).numpy(), np.maximum(a, 0))
        np.testing.assert_allclose(suanli.sum(ta, 0).numpy().ravel(), a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ta.sum(1).numpy().ravel(), a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
        e = np.exp(a - a.max(1, keepdims=True))
        np.testing.assert_allclose(suanli.softmax(ta).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_tensor_errors_are_typed():
    a = suanli.asarray(np.ones((2, 3)))
    b = suanli.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        a @ b
    with pytest.raises(ValueError):
        a + suanli.asarray(np.ones((3, 3)))
    with pytest.raises(TypeError, match="numeric"):
        suanli.asarray(np.array(["a", "b"]))
    with pytest.raises(ValueError):
        a.reshape([4, 2])
    assert a.reshape([3, 2]).shape == (3, 2)


def test_out_of_memory_is_a_memory_error(monkeypatch):
    # A device opened under a memory limit refuses what does not fit.
    monkeypatch.setenv("SUANLI_MEMORY_LIMIT", "1MiB")
    dev = suanli.Device("cpu")
    with pytest.raises(MemoryError):
        suanli.asarray(np.zeros((1024, 1024), np.float32), device=dev)
