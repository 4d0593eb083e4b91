"""Every row docs/PYTHON.md's compatibility table calls "full" is used here (and in
test_compat_full_more.py) the way Keras's or TensorFlow's documentation shows it, with its
documented arguments, and checked against NumPy: a "full" row without a test fails
test_every_full_row_has_a_test."""

import math

import numpy as np
import pytest

import suanli as tf
from suanli import keras

from compat_registry import F32, TESTS, full, linear, one_sgd_step
from test_compat_table import table


def test_every_full_row_has_a_test():
    import test_compat_full_more  # noqa: F401  (registers its rows)

    rows = {n for n, s in table().items() if s == "full"}
    assert sorted(rows - set(TESTS)) == [], "full rows without a test"
    assert sorted(set(TESTS) - rows) == [], "tests for rows that are not full"


def on(layer, x):
    """``layer`` alone in a model, applied to ``x``."""
    m = keras.Sequential([keras.Input(shape=x.shape[1:]), layer])
    return m.predict(x, verbose=0)


# ---- Sequential ----------------------------------------------------------------------------


@full("tf.keras.Sequential.add")
def _(rng, tmp):
    m = keras.Sequential()
    m.add(keras.Input(shape=(4,)))
    m.add(keras.layers.Dense(3), rebuild=True)
    m.add(keras.layers.Dense(2))
    assert len(m.layers) == 2
    assert m.output_shape == (None, 2)


@full("tf.keras.Sequential.build")
def _(rng, tmp):
    m = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(2)])
    m.build(input_shape=(None, 5))
    assert m.input_shape == (None, 5)
    assert m.count_params() == 5 * 3 + 3 + 3 * 2 + 2


@full("tf.keras.Sequential.count_params")
def _(rng, tmp):
    m = keras.Sequential([keras.Input(shape=(6,)), keras.layers.Dense(4), keras.layers.Dense(1, use_bias=False)])
    assert m.count_params() == 6 * 4 + 4 + 4


@full("tf.keras.Sequential.get_weights")
def _(rng, tmp):
    m, w, b = linear(rng)
    got = m.get_weights()
    assert [a.shape for a in got] == [(4, 3), (3,)]
    np.testing.assert_array_equal(got[0], w)
    np.testing.assert_array_equal(got[1], b)


@full("tf.keras.Sequential.set_weights")
def _(rng, tmp):
    m, w, b = linear(rng)
    x = rng.normal(size=(5, 4)).astype(F32)
    m.set_weights(weights=[w * 2, b - 1])
    np.testing.assert_allclose(m.predict(x, verbose=0), x @ (w * 2) + (b - 1), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        m.set_weights([w.T, b])


@full("tf.keras.Sequential.input_shape")
def _(rng, tmp):
    m, _, _ = linear(rng, inputs=7)
    assert m.input_shape == (None, 7)


@full("tf.keras.Sequential.output_shape")
def _(rng, tmp):
    m, _, _ = linear(rng, units=5)
    assert m.output_shape == (None, 5)


@full("tf.keras.Sequential.get_layer")
def _(rng, tmp):
    m = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3, name="first"), keras.layers.Dense(2, name="second")])
    assert m.get_layer(name="second") is m.layers[1]
    assert m.get_layer(index=0) is m.layers[0]
    assert m.get_layer(index=0).get_weights()[0].shape == (4, 3)
    with pytest.raises(ValueError):
        m.get_layer(name="third")


# ---- layers --------------------------------------------------------------------------------


def pool(x, k, s, op):
    n, h, w, c = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    out = np.empty((n, oh, ow, c), F32)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j, :] = op(x[:, i * s:i * s + k, j * s:j * s + k, :], axis=(1, 2))
    return out


@full("tf.keras.layers.MaxPooling2D")
def _(rng, tmp):
    x = rng.normal(size=(2, 6, 6, 3)).astype(F32)
    got = on(keras.layers.MaxPooling2D(pool_size=(2, 2), strides=None, padding="valid", data_format="channels_last"), x)
    np.testing.assert_allclose(got, pool(x, 2, 2, np.max), rtol=1e-6)
    got = on(keras.layers.MaxPooling2D(pool_size=3, strides=(1, 1)), x)
    np.testing.assert_allclose(got, pool(x, 3, 1, np.max), rtol=1e-6)


@full("tf.keras.layers.AveragePooling2D")
def _(rng, tmp):
    x = rng.normal(size=(2, 6, 6, 3)).astype(F32)
    got = on(keras.layers.AveragePooling2D(pool_size=(2, 2), strides=None, padding="valid", data_format="channels_last"), x)
    np.testing.assert_allclose(got, pool(x, 2, 2, np.mean), rtol=1e-5, atol=1e-6)
    got = on(keras.layers.AveragePooling2D(pool_size=3, strides=(1, 1)), x)
    np.testing.assert_allclose(got, pool(x, 3, 1, np.mean), rtol=1e-5, atol=1e-6)


@full("tf.keras.layers.Flatten")
def _(rng, tmp):
    x = rng.normal(size=(3, 2, 4, 5)).astype(F32)
    np.testing.assert_array_equal(on(keras.layers.Flatten(data_format=None), x), x.reshape(3, -1))


@full("tf.keras.layers.Reshape")
def _(rng, tmp):
    x = rng.normal(size=(3, 12)).astype(F32)
    np.testing.assert_array_equal(on(keras.layers.Reshape(target_shape=(3, 4)), x), x.reshape(3, 3, 4))
    np.testing.assert_array_equal(on(keras.layers.Reshape((-1, 2)), x), x.reshape(3, 6, 2))


@full("tf.keras.layers.Activation")
def _(rng, tmp):
    x = rng.normal(size=(4, 5)).astype(F32)
    np.testing.assert_allclose(on(keras.layers.Activation(activation="tanh"), x), np.tanh(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(on(keras.layers.Activation("sigmoid"), x), 1 / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(on(keras.layers.Activation(tf.nn.relu), x), np.maximum(x, 0), rtol=1e-6)


@full("tf.keras.layers.Rescaling")
def _(rng, tmp):
    x = rng.integers(0, 256, size=(3, 4, 4, 1)).astype(F32)
    np.testing.assert_allclose(on(keras.layers.Rescaling(scale=1.0 / 127.5, offset=-1.0), x), x / 127.5 - 1.0, rtol=1e-5, atol=1e-6)


def merged(layer, x):
    """``layer`` on two functions of one input: 2x and x + 1."""
    i = keras.Input(shape=(x.shape[1],))
    a = keras.layers.Rescaling(2.0)(i)
    b = keras.layers.Rescaling(scale=1.0, offset=1.0)(i)
    return keras.Model(inputs=i, outputs=layer([a, b])).predict(x, verbose=0)


@full("tf.keras.layers.Add")
def _(rng, tmp):
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(merged(keras.layers.Add(), x), 2 * x + (x + 1), rtol=1e-5, atol=1e-6)


@full("tf.keras.layers.Subtract")
def _(rng, tmp):
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(merged(keras.layers.Subtract(), x), 2 * x - (x + 1), rtol=1e-5, atol=1e-6)


@full("tf.keras.layers.Multiply")
def _(rng, tmp):
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(merged(keras.layers.Multiply(), x), 2 * x * (x + 1), rtol=1e-5, atol=1e-6)


@full("tf.keras.layers.Average")
def _(rng, tmp):
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(merged(keras.layers.Average(), x), (2 * x + x + 1) / 2, rtol=1e-5, atol=1e-6)


@full("tf.keras.layers.Maximum")
def _(rng, tmp):
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(merged(keras.layers.Maximum(), x), np.maximum(2 * x, x + 1), rtol=1e-5, atol=1e-6)


@full("tf.keras.layers.Concatenate")
def _(rng, tmp):
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(merged(keras.layers.Concatenate(axis=-1), x), np.concatenate([2 * x, x + 1], axis=-1), rtol=1e-5, atol=1e-6)
    x3 = rng.normal(size=(2, 3, 4)).astype(F32)
    i = keras.Input(shape=(3, 4))
    out = keras.layers.Concatenate(axis=1)([keras.layers.Rescaling(2.0)(i), keras.layers.Rescaling(-1.0)(i)])
    np.testing.assert_allclose(keras.Model(i, out).predict(x3, verbose=0), np.concatenate([2 * x3, -x3], axis=1), rtol=1e-5, atol=1e-6)


@full("tf.keras.layers")
def _(rng, tmp):
    from suanli.keras import layers

    x = rng.normal(size=(2, 3)).astype(F32)
    np.testing.assert_allclose(on(layers.Activation("relu"), x), np.maximum(x, 0))


# ---- losses --------------------------------------------------------------------------------


def check_loss(cls, elem, rng):
    t = rng.normal(size=(6, 3)).astype(F32)
    p = rng.normal(size=(6, 3)).astype(F32)
    per = elem(t - p).mean(axis=-1)
    sw = rng.uniform(0.1, 2.0, size=6).astype(F32)
    for reduction, want in (
        ("sum_over_batch_size", per.mean()),
        ("sum", per.sum()),
        ("none", per),
    ):
        loss = cls(reduction=reduction, name="mine")
        assert loss.name == "mine"
        np.testing.assert_allclose(loss(t, p).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(cls()(t, p, sample_weight=sw).numpy(), (per * sw).sum() / 6, rtol=1e-5)
    # And in training: evaluate reports the loss of known weights.
    m, w, b = linear(rng)
    x = rng.normal(size=(6, 4)).astype(F32)
    m.compile(optimizer="sgd", loss=cls(reduction="sum_over_batch_size", name="l"))
    np.testing.assert_allclose(m.evaluate(x, t, verbose=0), elem(t - (x @ w + b)).mean(), rtol=1e-4)


@full("tf.keras.losses.MeanSquaredError")
def _(rng, tmp):
    check_loss(keras.losses.MeanSquaredError, np.square, rng)


@full("tf.keras.losses.MeanAbsoluteError")
def _(rng, tmp):
    check_loss(keras.losses.MeanAbsoluteError, np.abs, rng)


# ---- metrics -------------------------------------------------------------------------------


def check_accuracy(metric, rng, dense):
    p = rng.uniform(size=(40, 4)).astype(F32)
    labels = rng.integers(0, 4, size=40)
    hit = (p.argmax(-1) == labels).astype(float)
    sw = rng.uniform(0.0, 1.0, size=40)
    t = np.eye(4, dtype=F32)[labels] if dense else labels.reshape(-1, 1)
    metric.update_state(t[:25], p[:25])
    metric.update_state(t[25:], p[25:])
    assert math.isclose(float(metric.result()), hit.mean(), rel_tol=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0
    metric.update_state(t, p, sample_weight=sw)
    assert math.isclose(float(metric.result().numpy()), (hit * sw).sum() / sw.sum(), rel_tol=1e-6)


def compiled_accuracy(metric, loss, y, rng):
    """``metric`` in compile: evaluate reports it under its name, the argmax accuracy of
    known weights."""
    m, w, b = linear(rng, activation="softmax")
    x = rng.normal(size=(64, 4)).astype(F32)
    m.compile(optimizer="adam", loss=loss, metrics=[metric])
    logs = m.evaluate(x, y(x @ w + b), verbose=0, return_dict=True)
    return logs[metric.name], x @ w + b


@full("tf.keras.metrics.SparseCategoricalAccuracy")
def _(rng, tmp):
    check_accuracy(keras.metrics.SparseCategoricalAccuracy(name="sca", dtype="float32"), rng, dense=False)
    labels = rng.integers(0, 3, size=64)
    got, z = compiled_accuracy(keras.metrics.SparseCategoricalAccuracy(name="sca"), "sparse_categorical_crossentropy", lambda z: labels, rng)
    assert math.isclose(got, (z.argmax(-1) == labels).mean(), rel_tol=1e-6)


@full("tf.keras.metrics.CategoricalAccuracy")
def _(rng, tmp):
    check_accuracy(keras.metrics.CategoricalAccuracy(name="ca", dtype=None), rng, dense=True)
    labels = rng.integers(0, 3, size=64)
    got, z = compiled_accuracy(keras.metrics.CategoricalAccuracy(name="ca"), "categorical_crossentropy", lambda z: np.eye(3, dtype=F32)[labels], rng)
    assert math.isclose(got, (z.argmax(-1) == labels).mean(), rel_tol=1e-6)


# ---- optimizers and schedules ----------------------------------------------------------------


@full("tf.keras.optimizers.get")
def _(rng, tmp):
    opt = keras.optimizers.get("adam")
    assert isinstance(opt, keras.optimizers.Adam) and opt.learning_rate == 0.001
    same = keras.optimizers.SGD(0.3)
    assert keras.optimizers.get(same) is same
    opt = keras.optimizers.get({"class_name": "SGD", "config": {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": None, "clipnorm": None, "use_ema": False, "name": "SGD"}})
    assert isinstance(opt, keras.optimizers.SGD)
    assert opt.learning_rate == 0.05 and opt._native_args()["momentum"] == 0.9 and opt._native_args()["nesterov"] is True
    again = keras.optimizers.get({"class_name": "RMSprop", "config": keras.optimizers.RMSprop(0.02, rho=0.8).get_config()})
    assert again.learning_rate == 0.02 and again._native_args()["rho"] == 0.8
    with pytest.raises(ValueError):
        keras.optimizers.get("adagrad")


@full("tf.keras.optimizers.schedules.LearningRateSchedule")
def _(rng, tmp):
    steps = []

    class Constant(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            steps.append(int(step))
            return 0.1

    got, want = one_sgd_step(rng, Constant())
    assert steps and steps[0] == 0
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-6)


@full("tf.keras.optimizers.schedules")
def _(rng, tmp):
    from suanli.keras.optimizers import schedules

    s = schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    got, want = one_sgd_step(rng, s)  # step 0: 0.1
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-6)


@full("tf.keras.optimizers.schedules.ExponentialDecay")
def _(rng, tmp):
    s = keras.optimizers.schedules.ExponentialDecay(initial_learning_rate=0.1, decay_steps=10, decay_rate=0.5, staircase=False, name="e")
    for step in (0, 5, 10, 25):
        assert math.isclose(s(step), 0.1 * 0.5 ** (step / 10), rel_tol=1e-9)
    s = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True)
    for step in (0, 9, 10, 25):
        assert math.isclose(s(step), 0.1 * 0.5 ** (step // 10), rel_tol=1e-9)


@full("tf.keras.optimizers.schedules.InverseTimeDecay")
def _(rng, tmp):
    s = keras.optimizers.schedules.InverseTimeDecay(initial_learning_rate=0.1, decay_steps=4, decay_rate=0.5, staircase=False, name="i")
    for step in (0, 3, 8):
        assert math.isclose(s(step), 0.1 / (1 + 0.5 * step / 4), rel_tol=1e-9)
    s = keras.optimizers.schedules.InverseTimeDecay(0.1, 4, 0.5, staircase=True)
    for step in (0, 3, 8):
        assert math.isclose(s(step), 0.1 / (1 + 0.5 * (step // 4)), rel_tol=1e-9)


@full("tf.keras.optimizers.schedules.PiecewiseConstantDecay")
def _(rng, tmp):
    s = keras.optimizers.schedules.PiecewiseConstantDecay(boundaries=[10, 20], values=[1.0, 0.5, 0.1], name="p")
    assert [s(t) for t in (0, 10, 11, 20, 21, 1000)] == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]


@full("tf.keras.optimizers.schedules.CosineDecay")
def _(rng, tmp):
    s = keras.optimizers.schedules.CosineDecay(initial_learning_rate=0.1, decay_steps=10, alpha=0.2, name="c")
    for step in (0, 5, 10, 15):
        cos = 0.5 * (1 + math.cos(math.pi * min(step, 10) / 10))
        assert math.isclose(s(step), 0.1 * ((1 - 0.2) * cos + 0.2), rel_tol=1e-9)
    w = keras.optimizers.schedules.CosineDecay(0.0, decay_steps=10, warmup_target=0.2, warmup_steps=4)
    assert math.isclose(w(2), 0.1, rel_tol=1e-9)  # half-way up the linear warm-up
    assert math.isclose(w(4 + 5), 0.2 * 0.5, rel_tol=1e-9)  # half-way down the cosine


@pytest.mark.parametrize("name", sorted(n for n, fn in TESTS.items() if fn.__module__ == __name__))
def test_full_row(name, tmp_path):
    TESTS[name](np.random.default_rng(0), tmp_path)
