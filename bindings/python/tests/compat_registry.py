"""The registry of test_compat_full*.py: one test per "full" row of docs/PYTHON.md's
compatibility table, and the helpers they share."""

import numpy as np

import suanli as tf
from suanli import keras

F32 = np.float32
TESTS = {}


def full(name):
    def register(fn):
        assert name not in TESTS, name
        TESTS[name] = fn
        return fn

    return register


def linear(rng, inputs=4, units=3, activation=None):
    """A one-Dense model with known weights."""
    m = keras.Sequential([keras.Input(shape=(inputs,)), keras.layers.Dense(units, activation=activation)])
    w = rng.normal(size=(inputs, units)).astype(F32)
    b = rng.normal(size=(units,)).astype(F32)
    m.set_weights([w, b])
    return m, w, b


def one_sgd_step(rng, lr):
    """A linear model, one full-batch SGD step at ``lr`` (a number or schedule): the
    weights it gives and the weights that step must give by hand (MSE's gradient)."""
    m, w, b = linear(rng)
    x = rng.normal(size=(8, 4)).astype(F32)
    y = rng.normal(size=(8, 3)).astype(F32)
    m.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss="mse")
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    g = 2 * (x @ w + b - y) / y.size
    return m.get_weights(), [w - 0.1 * (x.T @ g), b - 0.1 * g.sum(0)]


def elementwise(fn, ref, rng):
    x = rng.normal(size=(3, 5)).astype(F32)
    np.testing.assert_allclose(fn(tf.constant(x), name="op").numpy(), ref(x), rtol=1e-5, atol=1e-6)
