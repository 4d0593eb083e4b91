"""``suanli.numpy.random``: reproducible by seed, NumPy's signatures, the distributions'
moments, and errors for bad arguments."""

import numpy as np
import pytest

import suanli.numpy as xp


def test_seeded_streams_repeat_and_differ():
    a = xp.random.default_rng(7).normal(size=(3, 4)).get()
    b = xp.random.default_rng(7).normal(size=(3, 4)).get()
    c = xp.random.default_rng(8).normal(size=(3, 4)).get()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    g = xp.random.default_rng(7)
    first, second = g.random(5).get(), g.random(5).get()
    assert not np.array_equal(first, second), "each draw advances the stream"


def test_distributions_and_dtypes():
    g = xp.random.default_rng(1)
    u = g.uniform(-1.0, 1.0, size=100_000).get()
    assert u.dtype == np.float32 and u.min() >= -1.0 and u.max() < 1.0
    assert abs(u.mean()) < 0.01 and abs(u.var() - 1 / 3) < 0.01
    z = g.standard_normal(size=(200, 500)).get()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    k = g.integers(5, size=1000, dtype=xp.uint8)
    assert k.dtype == xp.uint8 and set(np.unique(k.get())) == set(range(5))
    e = g.integers(1, 3, size=1000, endpoint=True).get()
    assert set(np.unique(e)) == {1, 2, 3}
    assert g.random().shape == ()


def test_bad_arguments():
    g = xp.random.default_rng(0)
    with pytest.raises(ValueError):
        g.normal(0.0, -1.0, size=3)
    with pytest.raises(ValueError):
        g.integers(3, 3, size=2)
    with pytest.raises(TypeError):
        g.random(3, dtype="float64")
    with pytest.raises(ValueError):
        xp.random.default_rng(-1)
