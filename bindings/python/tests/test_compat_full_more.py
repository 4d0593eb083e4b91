"""The rest of the "full" rows' tests (see test_compat_full.py): callbacks, datasets,
utilities, tensor functions, devices and the modules."""

import math

import numpy as np
import pytest

import suanli as tf
from suanli import keras

from compat_registry import F32, TESTS, elementwise, full, linear, one_sgd_step


# ---- callbacks -------------------------------------------------------------------------------


def two_step_data(rng):
    x = rng.normal(size=(8, 4)).astype(F32)
    y = rng.normal(size=(8, 3)).astype(F32)
    return x, y


@full("tf.keras.callbacks.History")
def _(rng, tmp):
    m, w, b = linear(rng)
    x, y = two_step_data(rng)
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    mine = keras.callbacks.History()
    h = m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[mine])
    assert isinstance(h, keras.callbacks.History) and m.history is h
    assert h.epoch == [0, 1] and mine.epoch == [0, 1]
    g = 2 * (x @ w + b - y) / y.size
    w1, b1 = w - 0.1 * (x.T @ g), b - 0.1 * g.sum(0)
    want = [((x @ w + b - y) ** 2).mean(), ((x @ w1 + b1 - y) ** 2).mean()]
    np.testing.assert_allclose(h.history["loss"], want, rtol=1e-4)
    assert mine.history == h.history


@full("tf.keras.callbacks.EarlyStopping")
def _(rng, tmp):
    m, _, _ = linear(rng)
    x, y = two_step_data(rng)
    m.compile(optimizer="sgd", loss="mse")
    # No loss beats a baseline of 0: stops once patience (1) has run out after the first epoch.
    es = keras.callbacks.EarlyStopping(monitor="loss", min_delta=0, patience=1, verbose=0, mode="min", baseline=0.0, restore_best_weights=False, start_from_epoch=0)
    h = m.fit(x, y, epochs=10, verbose=0, callbacks=[es])
    assert h.epoch == [0, 1] and es.stopped_epoch == 1
    # An improvement must be larger than min_delta: the first epoch is the best, two epochs wait.
    es = keras.callbacks.EarlyStopping(monitor="loss", min_delta=1e9, patience=2, restore_best_weights=True)
    h = m.fit(x, y, epochs=10, verbose=0, callbacks=[es])
    assert h.epoch == [0, 1, 2] and es.best_epoch == 0 and es.best == h.history["loss"][0]


@full("tf.keras.callbacks.LearningRateScheduler")
def _(rng, tmp):
    m, _, _ = linear(rng)
    x, y = two_step_data(rng)
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    seen = []
    sched = keras.callbacks.LearningRateScheduler(schedule=lambda epoch, lr: seen.append(lr) or 0.1 * 0.5**epoch, verbose=0)
    h = m.fit(x, y, epochs=3, verbose=0, callbacks=[sched])
    np.testing.assert_allclose(h.history["learning_rate"], [0.1, 0.05, 0.025])
    np.testing.assert_allclose(seen, [0.1, 0.1, 0.05])
    assert math.isclose(m.optimizer.learning_rate, 0.025)


@full("tf.keras.callbacks.ReduceLROnPlateau")
def _(rng, tmp):
    m, _, _ = linear(rng)
    x, y = two_step_data(rng)
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    # min_delta so large that only the first epoch counts as an improvement.
    cb = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, verbose=0, mode="auto", min_delta=1e9, cooldown=0, min_lr=0.03)
    h = m.fit(x, y, epochs=4, verbose=0, callbacks=[cb])
    np.testing.assert_allclose(h.history["learning_rate"], [0.1, 0.1, 0.05, 0.03])
    assert math.isclose(m.optimizer.learning_rate, 0.03)


@full("tf.keras.callbacks.CSVLogger")
def _(rng, tmp):
    m, _, _ = linear(rng)
    x, y = two_step_data(rng)
    m.compile(optimizer="sgd", loss="mse")
    path = tmp / "log.csv"
    h1 = m.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.CSVLogger(filename=str(path), separator=";", append=False)])
    h2 = m.fit(x, y, epochs=1, verbose=0, callbacks=[keras.callbacks.CSVLogger(str(path), separator=";", append=True)])
    rows = [r.split(";") for r in path.read_text().splitlines()]
    assert rows[0] == ["epoch", "loss"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "0"]
    np.testing.assert_allclose([float(r[1]) for r in rows[1:]], h1.history["loss"] + h2.history["loss"], rtol=1e-6)


@full("tf.keras.callbacks")
def _(rng, tmp):
    from suanli.keras import callbacks

    class Count(callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.n = epoch + 1

    m, _, _ = linear(rng)
    m.compile(optimizer="sgd", loss="mse")
    c = Count()
    m.fit(*two_step_data(rng), epochs=2, verbose=0, callbacks=[c])
    assert c.n == 2


# ---- data, utilities, tensors, devices -------------------------------------------------------


def check_dataset(module, **kwargs):
    (x, y), (xt, yt) = module.load_data(**kwargs)
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8 and y.shape == (60000,)
    assert xt.shape == (10000, 28, 28) and yt.shape == (10000,)
    assert sorted(np.unique(y)) == list(range(10)) and x.max() == 255


@full("tf.keras.datasets.mnist")
def _(rng, tmp):
    check_dataset(keras.datasets.mnist, path="mnist.npz")


@full("tf.keras.datasets.fashion_mnist")
def _(rng, tmp):
    check_dataset(keras.datasets.fashion_mnist)


@full("tf.keras.datasets")
def _(rng, tmp):
    from suanli.keras import datasets

    (_, y), _ = datasets.mnist.load_data()
    assert np.bincount(y).sum() == 60000


@full("tf.keras.utils.set_random_seed")
def _(rng, tmp):
    def weights():
        return keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(4)]).get_weights()[0]

    keras.utils.set_random_seed(seed=7)
    a = weights()
    keras.utils.set_random_seed(7)
    b = weights()
    keras.utils.set_random_seed(8)
    c = weights()
    keras.utils.set_random_seed(0)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    limit = math.sqrt(6 / (5 + 4))  # glorot_uniform
    assert np.abs(a).max() <= limit and np.abs(a).max() > 0


@full("tf.keras.utils.to_categorical")
def _(rng, tmp):
    y = np.array([0, 2, 1, 2])
    np.testing.assert_array_equal(keras.utils.to_categorical(y, num_classes=4), np.eye(4, dtype=F32)[y])
    np.testing.assert_array_equal(keras.utils.to_categorical(x=y), np.eye(3, dtype=F32)[y])
    np.testing.assert_array_equal(keras.utils.to_categorical(y=y, num_classes=3), np.eye(3, dtype=F32)[y])  # Keras 2's name
    grid = np.array([[0, 1], [1, 1], [2, 0]])
    np.testing.assert_array_equal(keras.utils.to_categorical(grid), np.eye(3, dtype=F32)[grid])
    np.testing.assert_array_equal(keras.utils.to_categorical(y.reshape(-1, 1)), np.eye(3, dtype=F32)[y])


@full("tf.nn.relu")
def _(rng, tmp):
    x = rng.normal(size=(3, 5)).astype(F32)
    np.testing.assert_array_equal(tf.nn.relu(features=tf.constant(x), name="r").numpy(), np.maximum(x, 0))


@full("tf.nn.sigmoid")
def _(rng, tmp):
    elementwise(tf.nn.sigmoid, lambda x: 1 / (1 + np.exp(-x)), rng)


@full("tf.nn.tanh")
def _(rng, tmp):
    elementwise(tf.nn.tanh, np.tanh, rng)


@full("tf.math.sigmoid")
def _(rng, tmp):
    elementwise(tf.math.sigmoid, lambda x: 1 / (1 + np.exp(-x)), rng)


@full("tf.math.tanh")
def _(rng, tmp):
    elementwise(tf.math.tanh, np.tanh, rng)


@full("tf.device")
def _(rng, tmp):
    with tf.device(device_name="cpu") as dev:
        t = tf.constant([[1.0, 2.0]])
        m, w, b = linear(rng)
        x = rng.normal(size=(2, 4)).astype(F32)
        np.testing.assert_allclose(m.predict(x, verbose=0), x @ w + b, rtol=1e-5, atol=1e-6)
    assert t.device == dev and m.device == dev


@full("tf.test.is_gpu_available")
def _(rng, tmp):
    got = tf.test.is_gpu_available(cuda_only=False, min_cuda_compute_capability=None)
    assert got is tf.is_gpu_available()


@full("tf.test.gpu_device_name")
def _(rng, tmp):
    assert tf.test.gpu_device_name() == ("/device:GPU:0" if tf.test.is_gpu_available() else "")



# ---- the modules ---------------------------------------------------------------------------


@full("tf.keras")
def _(rng, tmp):
    i = keras.Input(shape=(4,))
    o = keras.layers.Dense(3)(i)
    m = keras.Model(inputs=i, outputs=o)
    w, b = rng.normal(size=(4, 3)).astype(F32), rng.normal(size=(3,)).astype(F32)
    m.set_weights([w, b])
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(m.predict(x, verbose=0), x @ w + b, rtol=1e-5, atol=1e-6)
    assert isinstance(keras.Sequential(), keras.models.Sequential)


@full("tf.keras.losses")
def _(rng, tmp):
    from suanli.keras import losses

    t, p = rng.normal(size=(4, 2)).astype(F32), rng.normal(size=(4, 2)).astype(F32)
    np.testing.assert_allclose(losses.MeanSquaredError()(t, p).numpy(), ((t - p) ** 2).mean(), rtol=1e-5)


@full("tf.keras.metrics")
def _(rng, tmp):
    from suanli.keras import metrics

    m = metrics.CategoricalAccuracy()
    m.update_state([[0, 1], [1, 0], [1, 0]], [[0.2, 0.8], [0.3, 0.7], [0.9, 0.1]])
    assert math.isclose(float(m.result()), 2 / 3)


@full("tf.keras.models")
def _(rng, tmp):
    from suanli.keras import models

    m, w, b = linear(rng)
    m.compile(optimizer="adam", loss="mse")
    m.save(str(tmp / "m.safetensors"))
    back = models.load_model(str(tmp / "m.safetensors"))
    x = rng.normal(size=(3, 4)).astype(F32)
    np.testing.assert_allclose(back.predict(x, verbose=0), x @ w + b, rtol=1e-5, atol=1e-6)
    fresh = models.clone_model(back)
    assert [a.shape for a in fresh.get_weights()] == [(4, 3), (3,)]


@full("tf.keras.optimizers")
def _(rng, tmp):
    got, want = one_sgd_step(rng, 0.1)
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-6)


@full("tf.keras.utils")
def _(rng, tmp):
    from suanli.keras import utils

    np.testing.assert_array_equal(utils.to_categorical([1, 0], 2), [[0, 1], [1, 0]])


@full("tf.nn")
def _(rng, tmp):
    from suanli import nn

    elementwise(nn.tanh, np.tanh, rng)


@full("tf.math")
def _(rng, tmp):
    from suanli import math as tfmath

    elementwise(tfmath.sigmoid, lambda x: 1 / (1 + np.exp(-x)), rng)


@full("tf.keras.mixed_precision.global_policy")
def _(rng, tmp):
    # As TensorFlow's guide: the policy set, read back, and taken by a model created after it.
    from suanli.keras import mixed_precision

    assert mixed_precision.global_policy().name == "float32"
    mixed_precision.set_global_policy("mixed_float16")
    try:
        policy = mixed_precision.global_policy()
        assert (policy.name, policy.compute_dtype, policy.variable_dtype) == ("mixed_float16", "float16", "float32")
        assert keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)]).dtype_policy == policy
    finally:
        mixed_precision.set_global_policy(None)
    assert mixed_precision.global_policy().name == "float32"


@pytest.mark.parametrize("name", sorted(n for n, fn in TESTS.items() if fn.__module__ == __name__))
def test_full_row(name, tmp_path):
    TESTS[name](np.random.default_rng(0), tmp_path)
