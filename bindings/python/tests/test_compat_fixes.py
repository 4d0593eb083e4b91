"""The rows of the compatibility table found wrong when used as a new user would, used the
way Keras documents them: LambdaCallback's batch hooks, metric objects used eagerly, loss
objects' constructor and reductions, optimizer arguments and configuration dicts, Dense's
regularizers and initializers, Input(batch_size=), and model.optimizer after load_model."""

import math

import numpy as np
import pytest

from suanli import keras

F32 = np.float32


def small_model(activation="softmax", units=3, loss="sparse_categorical_crossentropy"):
    m = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(units, activation=activation)])
    m.compile(optimizer="adam", loss=loss, metrics=["accuracy"] if activation == "softmax" else None)
    return m


# ---- LambdaCallback ------------------------------------------------------------------------


def test_lambda_callback_batch_hooks_fire_with_keras_arguments(rng):
    x = rng.normal(size=(100, 4)).astype(F32)
    y = rng.integers(0, 3, size=100)
    events = []
    cb = keras.callbacks.LambdaCallback(
        on_train_batch_begin=lambda batch, logs: events.append(("begin", batch)),
        on_train_batch_end=lambda batch, logs: events.append(("end", batch, dict(logs))),
        on_epoch_end=lambda epoch, logs: events.append(("epoch", epoch)),
        on_test_end=lambda logs: events.append(("test",)),
    )
    m = small_model()
    h = m.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[cb], validation_data=(x, y))
    steps = 4  # ceil(100 / 32)
    for epoch in range(2):
        # Each epoch: begins at batch 0, ends with its last batch (before validation and
        # on_epoch_end) whose logs are the epoch's training logs.
        i = events.index(("epoch", epoch))
        before = events[:i]
        assert ("begin", 0) in before
        ends = [e for e in before if e[0] == "end"]
        assert ends[-1][1] == steps - 1
        assert math.isclose(ends[-1][2]["loss"], h.history["loss"][epoch], rel_tol=1e-6)
        assert math.isclose(ends[-1][2]["accuracy"], h.history["accuracy"][epoch], rel_tol=1e-6)
        assert "val_loss" not in ends[-1][2]
        assert events[i - 1] == ("test",)
        events = events[i + 1:]


def test_lambda_callback_batch_end_fires_for_a_streamed_dataset(rng):
    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            r = np.random.default_rng(i)
            return r.normal(size=(8, 4)).astype(F32), r.integers(0, 3, size=8)

    ends = []
    m = small_model()
    old = keras.utils.MATERIALISE_LIMIT_BYTES
    keras.utils.MATERIALISE_LIMIT_BYTES = 8 * 4 * 4  # one batch a chunk: the streamed path
    try:
        h = m.fit(Batches(), epochs=2, verbose=0, callbacks=[keras.callbacks.LambdaCallback(on_batch_end=lambda b, logs: ends.append((b, logs["loss"])))])
    finally:
        keras.utils.MATERIALISE_LIMIT_BYTES = old
    assert [b for b, _ in ends] == [2, 2]
    np.testing.assert_allclose([l for _, l in ends], h.history["loss"], rtol=1e-6)


def test_lambda_callback_refuses_what_is_not_a_hook():
    with pytest.raises(TypeError, match="on_train_batch_ends"):
        keras.callbacks.LambdaCallback(on_train_batch_ends=print)
    with pytest.raises(TypeError, match="function"):
        keras.callbacks.LambdaCallback(on_epoch_end=3)


# ---- metrics used eagerly -------------------------------------------------------------------


def test_accuracy_metrics_used_eagerly_match_numpy(rng):
    p = rng.uniform(size=(30, 5))
    labels = rng.integers(0, 5, size=30)
    sw = rng.uniform(size=30)
    hit = (p.argmax(1) == labels).astype(float)
    for metric, target in (
        (keras.metrics.SparseCategoricalAccuracy(), labels),
        (keras.metrics.CategoricalAccuracy(), np.eye(5)[labels]),
    ):
        metric.update_state(target, p, sample_weight=sw)
        assert math.isclose(float(metric.result()), (hit * sw).sum() / sw.sum(), rel_tol=1e-9)
        assert isinstance(metric.result().numpy(), np.floating)
        metric.reset_state()
        metric.update_state(target[:10], p[:10])
        metric.update_state(target[10:], p[10:])
        assert math.isclose(metric(target[:0], p[:0]), hit.mean(), rel_tol=1e-9)

    t = rng.integers(0, 2, size=(30, 2)).astype(float)
    q = rng.uniform(size=(30, 2))
    b = keras.metrics.BinaryAccuracy(name="b", threshold=0.5)
    b.update_state(t, q)
    assert math.isclose(float(b.result()), (t == (q > 0.5)).mean(), rel_tol=1e-9)

    a = keras.metrics.Accuracy()
    a.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]], sample_weight=[1, 1, 0, 1])
    assert math.isclose(float(a.result()), 2 / 3)


def test_regression_and_threshold_metrics_used_eagerly_match_numpy(rng):
    t = rng.normal(size=(12, 3))
    p = rng.normal(size=(12, 3))
    mae, mse = keras.metrics.MeanAbsoluteError(), keras.metrics.MeanSquaredError()
    mae.update_state(t, p)
    mse.update_state(t, p)
    assert math.isclose(float(mae.result()), np.abs(t - p).mean(), rel_tol=1e-9)
    assert math.isclose(float(mse.result()), ((t - p) ** 2).mean(), rel_tol=1e-9)

    y = rng.integers(0, 2, size=200).astype(float)
    s = np.clip(y * 0.3 + rng.uniform(size=200) * 0.7, 0, 1)
    pos = s > 0.4
    prec, rec = keras.metrics.Precision(thresholds=0.4), keras.metrics.Recall(thresholds=0.4)
    prec.update_state(y, s)
    rec.update_state(y, s)
    tp = (pos & (y == 1)).sum()
    assert math.isclose(float(prec.result()), tp / pos.sum(), rel_tol=1e-9)
    assert math.isclose(float(rec.result()), tp / (y == 1).sum(), rel_tol=1e-9)

    auc = keras.metrics.AUC(num_thresholds=1000)
    auc.update_state(y, s)
    # The exact ROC AUC: the chance a positive outranks a negative.
    exact = (s[y == 1][:, None] > s[y == 0][None, :]).mean()
    assert abs(float(auc.result()) - exact) < 5e-3


def test_metric_update_state_refuses_shapes_that_do_not_fit():
    with pytest.raises(ValueError, match="shape"):
        keras.metrics.CategoricalAccuracy().update_state(np.zeros((4, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="sample_weight"):
        keras.metrics.SparseCategoricalAccuracy().update_state([0, 1], [[1, 0], [0, 1]], sample_weight=[1, 2, 3])


# ---- loss objects ----------------------------------------------------------------------------


def test_loss_objects_take_keras_constructor_arguments_and_reductions(rng):
    labels = rng.integers(0, 4, size=6)
    logits = rng.normal(size=(6, 4)).astype(F32)
    z = logits - logits.max(1, keepdims=True)
    per = -(z[np.arange(6), labels] - np.log(np.exp(z).sum(1)))
    sw = rng.uniform(size=6)
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=None, reduction="none", name="ce")
    np.testing.assert_allclose(ce(labels, logits).numpy(), per, rtol=1e-5)
    summed = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
    np.testing.assert_allclose(summed(labels, logits, sample_weight=sw).numpy(), (per * sw).sum(), rtol=1e-5)
    mean = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(mean(labels, logits).numpy(), per.mean(), rtol=1e-5)
    np.testing.assert_allclose(mean(labels, logits, sample_weight=sw).numpy(), (per * sw).sum() / 6, rtol=1e-5)

    t = rng.integers(0, 2, size=(6, 2)).astype(F32)
    q = rng.uniform(0.05, 0.95, size=(6, 2)).astype(F32)
    bce = -(t * np.log(q) + (1 - t) * np.log(1 - q)).mean(1)
    np.testing.assert_allclose(keras.losses.BinaryCrossentropy(reduction=None)(t, q).numpy(), bce, rtol=1e-5)
    h = keras.losses.Huber(delta=1.0, reduction="sum", name="h")
    d = np.abs(t - q * 3)
    want = np.where(d <= 1, 0.5 * d * d, d - 0.5).mean(1).sum()
    np.testing.assert_allclose(h(t, q * 3).numpy(), want, rtol=1e-5)

    mse = keras.losses.MeanSquaredError(reduction="sum", name="m")
    assert mse.get_config() == {"name": "m", "reduction": "sum", "dtype": None}
    assert keras.losses.MeanSquaredError.from_config(mse.get_config()).reduction == "sum"


def test_loss_arguments_suanli_lacks_are_refused_clearly():
    with pytest.raises(ValueError, match="reduction"):
        keras.losses.MeanSquaredError(reduction="average")
    with pytest.raises(ValueError, match="label_smoothing"):
        keras.losses.CategoricalCrossentropy(label_smoothing=0.1)
    m = small_model(activation=None, units=2, loss="mse")
    with pytest.raises(ValueError, match="mean over the batch"):
        m.compile(optimizer="sgd", loss=keras.losses.MeanSquaredError(reduction="sum"))


# ---- optimizers ------------------------------------------------------------------------------


def test_optimizers_take_keras_arguments_at_their_defaults():
    opt = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=False, weight_decay=None, clipnorm=1.0, use_ema=False, name="SGD")
    assert opt._native_args()["clipnorm"] == 1.0
    keras.optimizers.Adam(amsgrad=False, weight_decay=None, use_ema=False, ema_momentum=0.99, loss_scale_factor=None, gradient_accumulation_steps=None)
    keras.optimizers.RMSprop(momentum=0.0, centered=False)
    with pytest.raises(NotImplementedError, match="AdamW"):
        keras.optimizers.SGD(weight_decay=0.01)
    with pytest.raises(NotImplementedError, match="amsgrad"):
        keras.optimizers.Adam(amsgrad=True)
    with pytest.raises(TypeError, match="unsupported"):
        keras.optimizers.SGD(lerning_rate=0.1)


def test_optimizers_get_takes_a_config_dict_with_a_schedule():
    opt = keras.optimizers.get({
        "class_name": "Adam",
        "config": {"learning_rate": {"class_name": "ExponentialDecay", "config": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5}}, "beta_1": 0.8},
    })
    assert isinstance(opt, keras.optimizers.Adam) and opt._native_args()["beta_1"] == 0.8
    assert math.isclose(opt._lr_at(10), 0.05)
    with pytest.raises(ValueError, match="class_name"):
        keras.optimizers.get({"class_name": "Adagrad", "config": {}})


# ---- layers ----------------------------------------------------------------------------------


def test_dense_takes_keras_arguments_and_refuses_what_it_lacks_by_name(rng):
    d = keras.layers.Dense(2, bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None)
    m = keras.Sequential([keras.Input(shape=(3,)), d])
    assert np.array_equal(m.get_weights()[1], np.zeros(2, F32))
    with pytest.raises(NotImplementedError, match="kernel_regularizer"):
        keras.layers.Dense(2, kernel_regularizer="l2")
    with pytest.raises(ValueError, match="bias_initializer.*zeros"):
        keras.layers.Dense(2, bias_initializer="ones")


def test_input_batch_size_shows_in_shapes_and_any_batch_runs(rng):
    i = keras.Input(shape=(4,), batch_size=32, dtype="float32", name="x")
    assert i.shape == (32, 4)
    o = keras.layers.Dense(2)(i)
    assert o.shape == (32, 2)
    m = keras.Model(i, o)
    w, b = rng.normal(size=(4, 2)).astype(F32), rng.normal(size=(2,)).astype(F32)
    m.set_weights([w, b])
    x = rng.normal(size=(5, 4)).astype(F32)
    np.testing.assert_allclose(m.predict(x, verbose=0), x @ w + b, rtol=1e-5, atol=1e-6)
    assert keras.Input(batch_shape=(8, 2, 3)).shape == (8, 2, 3)
    assert keras.layers.InputLayer(shape=(3,), batch_size=4).shape == (4, 3)
    with pytest.raises(NotImplementedError, match="sparse"):
        keras.Input(shape=(3,), sparse=True)
    with pytest.raises(ValueError, match="batch_size"):
        keras.Input(shape=(3,), batch_size=0)


# ---- load_model ------------------------------------------------------------------------------


@pytest.mark.parametrize("opt", [
    lambda: keras.optimizers.Adam(learning_rate=0.01, beta_1=0.8, clipnorm=2.0),
    lambda: keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    lambda: keras.optimizers.AdamW(0.003, weight_decay=0.01, global_clipnorm=1.0),
    lambda: keras.optimizers.RMSprop(0.002, rho=0.8, clipvalue=0.5),
])
def test_load_model_gives_back_the_optimizer(opt, rng, tmp_path):
    m = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(2)])
    o = opt()
    m.compile(optimizer=o, loss="mse")
    x, y = rng.normal(size=(16, 3)).astype(F32), rng.normal(size=(16, 2)).astype(F32)
    m.fit(x, y, epochs=1, verbose=0)
    m.save(tmp_path / "m.safetensors")
    back = keras.models.load_model(tmp_path / "m.safetensors")
    assert type(back.optimizer) is type(o)
    got, want = back.optimizer.get_config(), o.get_config()
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == (want[k] if isinstance(want[k], (str, bool)) else pytest.approx(want[k], rel=1e-6)), k
    # And it trains on, with LearningRateScheduler reaching the restored optimizer.
    h = back.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.LearningRateScheduler(lambda e, lr: lr * 0.5)])
    assert h.history["learning_rate"] == pytest.approx([want["learning_rate"] * 0.5, want["learning_rate"] * 0.25])
