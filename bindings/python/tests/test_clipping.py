"""Keras's gradient clipping arguments on the optimizers: global_clipnorm, clipnorm and
clipvalue change one full-batch SGD step exactly as NumPy clipping of the unclipped step's
gradients says; bad values are refused."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


def one_step(x, y, **clip):
    keras.utils.set_random_seed(5)
    m = keras.Sequential([keras.Input(shape=(6,)), layers.Dense(8, activation="tanh"), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0, **clip), loss="sparse_categorical_crossentropy")
    before = [w.astype(np.float64) for w in m.get_weights()]
    m.fit(x, y, epochs=1, batch_size=len(x), shuffle=False, verbose=0)
    return [b - a for b, a in zip(before, m.get_weights())]


def test_clipping_matches_numpy(rng):
    x = rng.standard_normal((40, 6)).astype(np.float32)
    y = rng.integers(0, 3, 40)
    g = one_step(x, y)
    total = np.sqrt(sum((t**2).sum() for t in g))
    c = 0.3 * total
    for got, want in zip(one_step(x, y, global_clipnorm=c), g):
        np.testing.assert_allclose(got, want * c / total, rtol=1e-4, atol=1e-7)
    limit = float(np.median([np.linalg.norm(t) for t in g]))
    for got, want in zip(one_step(x, y, clipnorm=limit), g):
        n = np.linalg.norm(want)
        np.testing.assert_allclose(got, want * min(1.0, limit / n), rtol=1e-4, atol=1e-7)
    v = float(np.abs(g[0]).max() / 3)
    for got, want in zip(one_step(x, y, clipvalue=v), g):
        np.testing.assert_allclose(got, np.clip(want, -v, v), rtol=1e-4, atol=1e-7)


def test_bad_clipping_arguments():
    with pytest.raises(ValueError, match="global_clipnorm must be a number > 0"):
        keras.optimizers.Adam(global_clipnorm=-1)
    with pytest.raises(ValueError, match="not both"):
        keras.optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(TypeError, match="unsupported arguments"):
        keras.optimizers.SGD(amsgrad=True)
    assert keras.optimizers.Adam(clipvalue=0.5).get_config()["clipvalue"] == 0.5
