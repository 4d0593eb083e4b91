"""The pieces of TensorFlow's API that Keras programs lean on beyond layers and fit: calling a
model, tf.nn / tf.math functions, loss objects called on data, layers that only transform
(Activation, Softmax, ReLU, Rescaling), a model used as a layer, Keras's printed lines, and
Fashion-MNIST."""

import os

import numpy as np
import pytest

import suanli
import suanli as tf
from suanli import keras
from suanli.keras import layers


def softmax64(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_calling_a_model_returns_a_tensor_before_compile(rng):
    m = keras.Sequential([layers.Flatten(input_shape=(4, 3)), layers.Dense(5, activation="tanh"), layers.Dense(2)])
    x = rng.standard_normal((6, 4, 3))
    y = m(x)
    assert isinstance(y, suanli.Tensor) and y.shape == (6, 2) and y.dtype == "float32"
    np.testing.assert_array_equal(y.numpy(), np.asarray(y))
    np.testing.assert_array_equal(m(x, training=False).numpy(), y.numpy())
    # The same through a Tensor input, and as predict gives it.
    np.testing.assert_array_equal(m(tf.constant(x)).numpy(), y.numpy())
    np.testing.assert_array_equal(m.predict(x, verbose=0), y.numpy())
    assert "numpy=" in repr(y) and "shape=(6, 2)" in repr(y)
    with pytest.raises(ValueError, match="training"):
        m(x, training=True)
    with pytest.raises(ValueError, match=r"\(4, 3\)"):
        m(rng.standard_normal((6, 5)))


def test_tf_functions_on_tensors_and_arrays(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    t = tf.convert_to_tensor(x)
    np.testing.assert_allclose(tf.nn.softmax(x).numpy(), softmax64(x), atol=1e-6)
    np.testing.assert_allclose(tf.nn.softmax(t).numpy(), softmax64(x), atol=1e-6)
    np.testing.assert_allclose(tf.nn.relu(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(tf.nn.sigmoid(x).numpy(), 1 / (1 + np.exp(-x.astype(np.float64))), atol=1e-6)
    np.testing.assert_array_equal(tf.argmax(t, axis=1).numpy(), np.argmax(x, axis=1))
    np.testing.assert_array_equal(tf.math.argmax(x, axis=-1).numpy(), np.argmax(x, axis=-1))
    np.testing.assert_allclose(tf.reduce_mean(x).numpy(), x.astype(np.float64).mean(), atol=1e-6)
    np.testing.assert_allclose(tf.reduce_sum(x, axis=0).numpy(), x.sum(axis=0), atol=1e-5)
    np.testing.assert_allclose(tf.reduce_mean(x, axis=1, keepdims=True).numpy(), x.mean(axis=1, keepdims=True), atol=1e-6)
    assert tf.reduce_sum(x).shape == ()
    # Three dimensions: softmax and argmax over the last axis.
    y = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(tf.nn.softmax(y).numpy(), softmax64(y), atol=1e-6)
    np.testing.assert_array_equal(tf.argmax(y, axis=-1).numpy(), np.argmax(y, axis=-1))
    c = tf.constant([[1, 2], [3, 4]])
    assert c.shape == (2, 2) and c.numpy().dtype == np.float32
    with pytest.raises(ValueError, match="axis"):
        tf.reduce_sum(y, axis=1)
    with pytest.raises(ValueError, match="float32"):
        tf.constant([1, 2], dtype="int64")


def test_loss_objects_are_callable(rng):
    logits = rng.standard_normal((4, 3)).astype(np.float32)
    y = np.array([0, 2, 1, 2], np.uint8)
    p = softmax64(logits)
    want = -np.log(p[np.arange(4), y]).mean()
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    got = sparse(y, logits)
    assert isinstance(got, suanli.Tensor) and got.shape == ()
    assert abs(float(got.numpy()) - want) < 1e-5
    got = keras.losses.SparseCategoricalCrossentropy()(y, tf.nn.softmax(logits))
    assert abs(float(got.numpy()) - want) < 1e-5
    onehot = np.eye(3, dtype=np.float32)[y]
    got = keras.losses.CategoricalCrossentropy(from_logits=True)(onehot, logits)
    assert abs(float(got.numpy()) - want) < 1e-5
    t = (rng.random((4, 3)) > 0.5).astype(np.float32)
    s = 1 / (1 + np.exp(-logits.astype(np.float64)))
    bce = -(t * np.log(s) + (1 - t) * np.log(1 - s)).mean()
    assert abs(float(keras.losses.BinaryCrossentropy(from_logits=True)(t, logits).numpy()) - bce) < 1e-5
    mse = ((logits.astype(np.float64) - t) ** 2).mean()
    assert abs(float(keras.losses.MeanSquaredError()(t, logits).numpy()) - mse) < 1e-5
    with pytest.raises(ValueError, match="class indices"):
        sparse(np.array([0, 3, 1, 2]), logits)


def test_activation_layers_and_rescaling(rng):
    x = rng.integers(0, 256, size=(8, 4, 4, 1)).astype(np.uint8)
    m = keras.Sequential([
        keras.Input(shape=(4, 4, 1)),
        layers.Rescaling(1.0 / 255),
        layers.Flatten(),
        layers.Dense(6),
        layers.ReLU(),
        layers.Dense(4),
        layers.Activation("tanh"),
        layers.Dense(3),
        layers.Softmax(),
    ])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    p = m.predict(x, verbose=0)
    np.testing.assert_allclose(p.sum(axis=1), 1, atol=1e-5)
    h = m.fit(x, np.arange(8) % 3, epochs=2, batch_size=4, verbose=0)
    assert len(h.history["loss"]) == 2 and np.isfinite(h.history["loss"]).all()
    assert [type(l).__name__ for l in m.layers][:2] == ["Rescaling", "Flatten"]
    assert layers.ReLU(negative_slope=0.1).negative_slope == 0.1
    with pytest.raises(ValueError, match="max_value"):
        layers.ReLU(max_value=6.0)
    with pytest.raises(ValueError, match="activation"):
        layers.Activation("swish2")
    # from_logits=True goes with a linear output; a Softmax layer is not one.
    with pytest.raises(ValueError, match="from_logits"):
        keras.Sequential([layers.Dense(3, input_shape=(2,)), layers.Softmax()]).compile(
            optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))


def test_a_model_inside_a_model_shares_its_weights(rng):
    inner = keras.Sequential([layers.Dense(8, activation="tanh", input_shape=(5,)), layers.Dense(3)])
    outer = keras.Sequential([inner, layers.Softmax()])
    x = rng.standard_normal((16, 5)).astype(np.float32)
    y = np.arange(16) % 3
    np.testing.assert_allclose(outer(x).numpy(), softmax64(inner(x).numpy()), atol=1e-6)
    inner.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = outer(x).numpy()
    inner.fit(x, y, epochs=3, batch_size=4, verbose=0)
    after = outer(x).numpy()
    assert not np.allclose(before, after), "training the inner model changes the outer one"
    np.testing.assert_allclose(after, softmax64(inner(x).numpy()), atol=1e-6)
    assert outer.count_params() == inner.count_params()
    # And the other way round: training the outer model trains the inner one's weights.
    outer.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    logits = inner(x).numpy()
    outer.fit(x, y, epochs=1, batch_size=4, verbose=0)
    assert not np.allclose(logits, inner(x).numpy())


def test_evaluate_and_fit_print_as_keras_does(rng, capsys):
    m = keras.Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = rng.standard_normal((100, 4))
    y = np.arange(100) % 3
    m.fit(x, y, epochs=2, verbose=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[2] == "Epoch 2/2", out
    assert out[1].startswith("4/4 - ") and " - loss: " in out[1] and "/epoch - " in out[1] and "[" not in out[1], out[1]
    m.evaluate(x, y, verbose=2)
    line = capsys.readouterr().out.strip()
    assert line.startswith("4/4 - ") and " - loss: " in line and " - accuracy: " in line and "[" not in line, line
    m.evaluate(x, y, verbose=0)
    assert capsys.readouterr().out == ""
    assert set(m.evaluate(x, y, verbose=0, return_dict=True)) == {"loss", "accuracy"}


def test_fashion_mnist_loads_or_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("FASHION_MNIST_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="FASHION_MNIST_DIR"):
        keras.datasets.fashion_mnist.load_data()
    monkeypatch.delenv("FASHION_MNIST_DIR")
    debian = "/usr/share/datasets/fashion-mnist"
    if not os.path.isdir(debian):
        pytest.skip("Debian's dataset-fashion-mnist is not installed here")
    (x, y), (xt, yt) = keras.datasets.fashion_mnist.load_data()
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8 and y.shape == (60000,)
    assert xt.shape == (10000, 28, 28) and set(np.unique(yt)) == set(range(10))
    # Not MNIST by another name.
    (mx, _), _ = keras.datasets.mnist.load_data()
    assert not np.array_equal(x[:10], mx[:10])


def test_weights_as_numpy_arrays_in_keras_layouts(rng, tmp_path):
    m = keras.Sequential([
        keras.Input(shape=(6, 6, 2)),
        layers.Conv2D(3, 3, activation="relu"),
        layers.BatchNormalization(),
        layers.Flatten(),
        layers.Dense(4),
    ])
    w = m.get_weights()
    assert [a.shape for a in w] == [(3, 3, 2, 3), (3,), (3,), (3,), (3,), (3,), (48, 4), (4,)]
    assert [l.name for l in m.layers] == ["conv2d", "batch_normalization", "flatten", "dense"]
    assert [a.shape for a in m.layers[0].get_weights()] == [(3, 3, 2, 3), (3,)]
    assert len(m.layers[1].get_weights()) == 4 and m.layers[2].get_weights() == []
    # The kernel is Keras's HWIO: a convolution computed from it by NumPy matches the model.
    new = [rng.standard_normal(a.shape).astype(np.float32) * 0.3 for a in w]
    new[4] = np.zeros(3, np.float32)  # moving mean
    new[5] = np.ones(3, np.float32)  # moving variance
    m.set_weights(new)
    for a, b in zip(m.get_weights(), new):
        np.testing.assert_array_equal(a, b)
    x = rng.standard_normal((2, 6, 6, 2)).astype(np.float32)
    k, b, gamma, beta = new[0], new[1], new[2], new[3]
    conv = np.zeros((2, 4, 4, 3))
    for i in range(4):
        for j in range(4):
            conv[:, i, j, :] = np.einsum("nhwc,hwco->no", x[:, i:i + 3, j:j + 3, :], k) + b
    h = np.maximum(conv, 0)
    h = gamma * h / np.sqrt(1 + 1e-3) + beta
    want = h.reshape(2, -1) @ new[6] + new[7]
    np.testing.assert_allclose(m.predict(x, verbose=0), want, atol=1e-4)
    # One layer at a time, shapes checked.
    m.layers[3].set_weights([np.zeros((48, 4)), np.arange(4)])
    np.testing.assert_array_equal(m.predict(x, verbose=0), np.tile(np.arange(4, dtype=np.float32), (2, 1)))
    with pytest.raises(ValueError, match="shape"):
        m.layers[3].set_weights([np.zeros((4, 48)), np.zeros(4)])
    with pytest.raises(ValueError, match="arrays"):
        m.set_weights(new[:3])
    # save_weights / load_weights into a clone, in place.
    path = tmp_path / "w.safetensors"
    m.save_weights(path)
    c = keras.models.clone_model(m)
    assert [l.name for l in c.layers] == ["conv2d", "batch_normalization", "flatten", "dense"]
    assert not np.array_equal(c.predict(x, verbose=0), m.predict(x, verbose=0))
    c.load_weights(path)
    np.testing.assert_array_equal(c.predict(x, verbose=0), m.predict(x, verbose=0))
    small = keras.Sequential([layers.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match="do not fit"):
        small.load_weights(path)


def test_regression_losses_by_keras_names(rng):
    x = rng.standard_normal((256, 2)).astype(np.float32)
    y = 2 * x[:, :1] - 3 * x[:, 1:] + 1
    for loss in ["mae", "mean_absolute_error", keras.losses.MeanAbsoluteError(), "huber", keras.losses.Huber(), "mse"]:
        keras.utils.set_random_seed(1)
        m = keras.Sequential([layers.Dense(1, input_shape=(2,))])
        m.compile(optimizer=keras.optimizers.Adam(0.05), loss=loss)
        h = m.fit(x, y, epochs=40, batch_size=32, verbose=0)
        assert set(h.history) == {"loss"}
        k, b = m.get_weights()
        np.testing.assert_allclose(k.ravel(), [2, -3], atol=0.1, err_msg=str(loss))
        np.testing.assert_allclose(b, [1], atol=0.1, err_msg=str(loss))
    # Called on data, against their formulas.
    p = rng.standard_normal((5, 3)).astype(np.float32)
    t = rng.standard_normal((5, 3)).astype(np.float32) * 2
    d = p.astype(np.float64) - t
    assert abs(float(keras.losses.MeanAbsoluteError()(t, p).numpy()) - np.abs(d).mean()) < 1e-6
    huber = np.where(np.abs(d) <= 1, 0.5 * d * d, np.abs(d) - 0.5).mean()
    assert abs(float(keras.losses.Huber()(t, p).numpy()) - huber) < 1e-6
    with pytest.raises(ValueError, match="delta"):
        keras.losses.Huber(delta=2.0)
    with pytest.raises(ValueError, match="accuracy"):
        keras.Sequential([layers.Dense(1, input_shape=(2,))]).compile(optimizer="adam", loss="mae", metrics=["accuracy"])


def test_metrics_by_name_and_object(rng, capsys):
    x = rng.standard_normal((120, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    m = keras.Sequential([layers.Dense(2, input_shape=(4,))])
    m.compile(optimizer=keras.optimizers.Adam(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["sparse_categorical_accuracy", keras.metrics.SparseCategoricalAccuracy(name="acc_obj"), "acc"])
    h = m.fit(x, y, epochs=3, batch_size=20, validation_split=0.25, verbose=2)
    assert set(h.history) == {"loss", "sparse_categorical_accuracy", "acc_obj", "acc", "val_loss", "val_sparse_categorical_accuracy", "val_acc_obj", "val_acc"}
    assert h.history["acc"] == h.history["acc_obj"] == h.history["sparse_categorical_accuracy"]
    line = capsys.readouterr().out.splitlines()[1]
    assert line.index(" - loss: ") < line.index(" - sparse_categorical_accuracy: ") < line.index(" - val_loss: "), line
    res = m.evaluate(x, y, verbose=0)
    assert len(res) == 4 and res[1] == res[2] == res[3]
    assert set(m.evaluate(x, y, verbose=0, return_dict=True)) == {"loss", "sparse_categorical_accuracy", "acc_obj", "acc"}
    # The accuracy of another kind of loss, and metrics suanli does not compute, are refused.
    with pytest.raises(ValueError, match="binary_crossentropy"):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=[keras.metrics.BinaryAccuracy()])
    with pytest.raises(ValueError, match="class indices"):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["auc"])
    with pytest.raises(ValueError, match="not supported"):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["f1_score"])


def _keras_auc(p, t, n=200):
    """Keras's ROC AUC by its definition, in NumPy: thresholds [-eps, 1/(n-1), ..., 1+eps],
    TP/FP at p > threshold, trapezoids between consecutive points."""
    th = np.array([-1e-7] + [i / (n - 1) for i in range(1, n - 1)] + [1 + 1e-7])
    p = np.clip(p.astype(np.float64).ravel(), 0, 1)
    pos = t.ravel() > 0.5
    tpr = np.array([(p[pos] > h).sum() for h in th]) / pos.sum()
    fpr = np.array([(p[~pos] > h).sum() for h in th]) / (~pos).sum()
    return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2))


def test_precision_recall_auc_and_errors_match_numpy(rng):
    x = rng.standard_normal((400, 4)).astype(np.float32)
    y = ((x[:, 0] + 0.5 * x[:, 1] + 0.5 * rng.standard_normal(400)) > 0).astype(np.float32).reshape(-1, 1)
    m = keras.Sequential([layers.Dense(8, activation="relu", input_shape=(4,)), layers.Dense(1, activation="sigmoid")])
    m.compile(optimizer=keras.optimizers.Adam(0.02), loss="binary_crossentropy",
              metrics=["accuracy", keras.metrics.Precision(), keras.metrics.Recall(thresholds=0.4, name="rec"), keras.metrics.AUC(), "mae", keras.metrics.MeanSquaredError()])
    h = m.fit(x[:300], y[:300], epochs=3, batch_size=32, validation_data=(x[300:], y[300:]), verbose=0)
    names = ["accuracy", "precision", "rec", "auc", "mae", "mean_squared_error"]
    assert list(h.history) == ["loss"] + names + ["val_loss"] + ["val_" + k for k in names]
    # evaluate (a ragged last batch) against NumPy on predict's output.
    xv, yv = x[300:], y[300:]
    res = m.evaluate(xv, yv, batch_size=33, verbose=0, return_dict=True)
    p = m.predict(xv, verbose=0).astype(np.float64)
    tp = lambda th: float(((p > th) & (yv > 0.5)).sum())
    assert res["precision"] == pytest.approx(tp(0.5) / float((p > 0.5).sum()), abs=1e-9)
    assert res["rec"] == pytest.approx(tp(0.4) / float((yv > 0.5).sum()), abs=1e-9)
    assert res["auc"] == pytest.approx(_keras_auc(p, yv), abs=1e-6)
    assert res["mae"] == pytest.approx(float(np.abs(p - yv).mean()), rel=1e-5)
    assert res["mean_squared_error"] == pytest.approx(float(((p - yv) ** 2).mean()), rel=1e-5)
    assert h.history["val_auc"][-1] == pytest.approx(m.evaluate(xv, yv, verbose=0, return_dict=True)["auc"], abs=1e-9)
    assert res["auc"] > 0.75
    # A stream of chunks adds the chunks' sums: the same values as the array.
    class Source(keras.utils.PyDataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return xv[i * 25:(i + 1) * 25], yv[i * 25:(i + 1) * 25]

    saved = keras.utils.MATERIALISE_LIMIT_BYTES
    keras.utils.MATERIALISE_LIMIT_BYTES = 25 * 4 * 4
    try:
        streamed = m.evaluate(Source(), verbose=0, return_dict=True)
    finally:
        keras.utils.MATERIALISE_LIMIT_BYTES = saved
    whole = m.evaluate(xv, yv, batch_size=25, verbose=0, return_dict=True)
    for k in whole:
        assert streamed[k] == pytest.approx(whole[k], abs=1e-6), k
    # Two of a kind, and bad parameters, are refused.
    with pytest.raises(ValueError, match="second precision"):
        m.compile(optimizer="adam", loss="binary_crossentropy", metrics=["precision", keras.metrics.Precision(0.7, name="p7")])
    for bad in (lambda: keras.metrics.Precision(thresholds=1.5), lambda: keras.metrics.AUC(curve="PR"), lambda: keras.metrics.Recall(top_k=2)):
        with pytest.raises(ValueError):
            bad()


def test_regression_metrics_on_a_regression_loss(rng):
    x = rng.standard_normal((200, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    m = keras.Sequential([layers.Dense(1, input_shape=(3,))])
    m.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse", metrics=["mae"])
    h = m.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert list(h.history) == ["loss", "mae"]
    loss, mae = m.evaluate(x, y, verbose=0)
    p = m.predict(x, verbose=0)
    assert mae == pytest.approx(float(np.abs(p - y).mean()), rel=1e-5)
    assert loss == pytest.approx(float(((p - y) ** 2).mean()), rel=1e-5)


def test_normalization_adapts_to_data(rng):
    # keras.io's regression tutorial: adapt a Normalization layer to the features, then train.
    x = (rng.standard_normal((400, 3)) * [10.0, 0.1, 3.0] + [50.0, -2.0, 0.0]).astype(np.float32)
    y = (x @ np.array([[0.3], [20.0], [-1.0]], np.float32) + 5.0).astype(np.float32)
    norm = layers.Normalization(axis=-1)
    norm.adapt(x)
    np.testing.assert_allclose(norm.mean, x.astype(np.float64).mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(norm.variance, x.astype(np.float64).var(axis=0), rtol=1e-4)
    m = keras.Sequential([keras.Input(shape=(3,)), norm, layers.Dense(1)])
    out = m(x[:4]).numpy()
    w, b = m.layers[1].get_weights()
    want = ((x[:4] - x.mean(axis=0)) / x.std(axis=0)) @ w + b
    np.testing.assert_allclose(out, want, atol=1e-3)
    assert [a.shape for a in norm.get_weights()] == [(3,), (3,)]
    assert m.count_params() == 6 + 4
    m.compile(optimizer=keras.optimizers.Adam(0.1), loss="mean_absolute_error")
    h = m.fit(x, y, epochs=30, batch_size=32, verbose=0)
    assert h.history["loss"][-1] < 0.2 * h.history["loss"][0]
    np.testing.assert_allclose(norm.get_weights()[0], x.mean(axis=0), rtol=1e-5)  # never trained
    # Adapting again after the build reaches the built model; scalars are accepted too.
    norm.adapt(x * 2)
    np.testing.assert_allclose(m.layers[0].get_weights()[0], 2 * x.mean(axis=0), rtol=1e-5)
    s = layers.Normalization(mean=3.0, variance=4.0)
    one = keras.Sequential([keras.Input(shape=(2,)), s])
    np.testing.assert_allclose(one(np.array([[5.0, 1.0]])).numpy(), [[1.0, -1.0]])
    with pytest.raises(ValueError, match="axis"):
        layers.Normalization(axis=0)


def test_frozen_layers_and_models(rng, tmp_path):
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    # Transfer learning as Keras's guide does it: a base model frozen, a new head trained.
    base = keras.Sequential([layers.Dense(6, activation="tanh", input_shape=(4,)), layers.Dense(5, activation="relu")])
    base.trainable = False
    head = keras.Sequential([base, layers.Dense(2, activation="softmax")])
    head.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    before = base.get_weights()
    top = head.layers[1].get_weights()
    lines = []
    head.summary(print_fn=lines.append)
    assert "Trainable params: 12" in lines[0] and "Non-trainable params: 65" in lines[0], lines[0]
    head.fit(x, y, epochs=2, batch_size=16, verbose=0)
    for a, b in zip(base.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(head.layers[1].get_weights()[0], top[0]), "the head trains"
    # A layer frozen after the build, and unfrozen again.
    m = keras.Sequential([layers.Dense(3, activation="tanh", input_shape=(4,)), layers.Dense(2, activation="softmax", trainable=False)])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    w1 = m.layers[1].get_weights()
    m.fit(x, y, epochs=1, batch_size=16, verbose=0)
    np.testing.assert_array_equal(m.layers[1].get_weights()[0], w1[0])
    m.layers[1].trainable = True
    m.fit(x, y, epochs=1, batch_size=16, verbose=0)
    assert not np.array_equal(m.layers[1].get_weights()[0], w1[0])
    # The flag travels with the model file and with clones.
    m.layers[0].trainable = False
    m.save(tmp_path / "m.safetensors")
    loaded = keras.models.load_model(tmp_path / "m.safetensors")
    assert [l.trainable for l in loaded.layers] == [False, True]
    assert [l.trainable for l in keras.models.clone_model(m).layers] == [False, True]


def test_batch_hooks_fire_per_submission_and_per_evaluation(rng):
    x = rng.standard_normal((100, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    seen = []

    class Hooks(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(("begin", batch, dict(logs or {})))

        def on_test_begin(self, logs=None):
            seen.append(("test_begin",))

        def on_test_batch_end(self, batch, logs=None):
            seen.append(("test_batch_end", batch, dict(logs)))

        def on_test_end(self, logs=None):
            seen.append(("test_end", dict(logs)))

    m = keras.Sequential([layers.Dense(2, input_shape=(4,))])
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    # 80 training rows in batches of 1: 80 steps, submitted as 0-31, 32-63, 64-79 per epoch.
    h = m.fit(x, y, epochs=2, batch_size=1, validation_split=0.2, verbose=0, callbacks=[Hooks()])
    begins = [s[1] for s in seen if s[0] == "begin"]
    assert begins == [0, 32, 64, 0, 32, 64], begins
    assert all(s[2] == {} for s in seen if s[0] == "begin")
    tests = [s for s in seen if s[0] == "test_batch_end"]
    assert [t[1] for t in tests] == [19, 19]  # 20 validation rows at batch size 1
    assert tests[-1][2] == {"loss": h.history["val_loss"][-1], "accuracy": h.history["val_accuracy"][-1]}
    seen.clear()
    res = m.evaluate(x, y, batch_size=30, verbose=0, return_dict=True, callbacks=[Hooks()])
    assert [s[0] for s in seen] == ["test_begin", "test_batch_end", "test_end"]
    assert seen[1][1] == 3 and seen[1][2] == res == seen[2][1]
    # A hook that raises stops fit with its exception; the model stays usable.
    class Boom(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 32:
                raise RuntimeError("boom at 32")

    with pytest.raises(RuntimeError, match="boom at 32"):
        m.fit(x, y, epochs=1, batch_size=1, verbose=0, callbacks=[Boom()])
    assert m.evaluate(x, y, verbose=0)[0] > 0


def test_class_weight_and_sample_weight(rng):
    x = rng.standard_normal((150, 4)).astype(np.float32)
    y = np.where(x[:, 0] > 0.5, 2, np.where(x[:, 1] > 0, 1, 0)).astype(np.int64)
    xv, yv = x[100:], y[100:]
    x, y = x[:100], y[:100]

    def trained(**kw):
        keras.utils.set_random_seed(3)
        m = keras.Sequential([layers.Dense(8, activation="relu", input_shape=(4,)), layers.Dense(3, activation="softmax")])
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        h = m.fit(x, y, epochs=2, batch_size=16, verbose=0, **kw)
        return m, h

    cw = {0: 1.0, 1: 3.0, 2: 0.5}
    m1, _ = trained(class_weight=cw)
    m2, _ = trained(sample_weight=np.array([cw[c] for c in y], np.float32))
    m3, _ = trained()
    for a, b, c in zip(m1.get_weights(), m2.get_weights(), m3.get_weights()):
        np.testing.assert_array_equal(a, b)
        assert np.abs(a - c).max() > 1e-4, "class_weight changed nothing"
    # The weighted loss evaluate reports, against predict's output (ragged last batch).
    w = rng.uniform(0, 2, len(xv)).astype(np.float32)
    p = m1.predict(xv, verbose=0).astype(np.float64)
    rows = -np.log(p[np.arange(len(yv)), yv])
    loss, acc = m1.evaluate(xv, yv, batch_size=16, sample_weight=w, verbose=0)
    assert loss == pytest.approx(float((rows * w).mean()), rel=1e-5)
    assert acc == m1.evaluate(xv, yv, verbose=0)[1]  # metrics stay unweighted
    # validation_data with weights reports the weighted validation loss.
    _, h = trained(validation_data=(xv, yv, w))
    m4, _ = trained()
    assert h.history["val_loss"][-1] == pytest.approx(m4.evaluate(xv, yv, sample_weight=w, verbose=0)[0], rel=1e-6)
    # One-hot targets take class_weight by their argmax.
    m5 = keras.Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))])
    m5.compile(optimizer="adam", loss="categorical_crossentropy")
    m5.fit(x, np.eye(3, dtype=np.float32)[y], class_weight=cw, epochs=1, verbose=0)
    # Bad input: a clear error, the model still usable.
    for kw, msg in [({"class_weight": cw, "sample_weight": np.ones(100)}, "not both"),
                    ({"sample_weight": np.ones(99)}, "one weight per row"),
                    ({"sample_weight": -np.ones(100)}, "finite and >= 0"),
                    ({"class_weight": [1, 2]}, "dict")]:
        with pytest.raises(ValueError, match=msg):
            m1.fit(x, y, verbose=0, **kw)
    assert np.isfinite(m1.evaluate(xv, yv, verbose=0)[0])


def test_non_finite_inputs_are_refused_not_trained_on():
    # All-NaN inputs once trained to a loss of 1.0987 with no error (relu maps NaN to 0 on
    # some adapters); the dataset now refuses them, naming the first, and the model is usable.
    m = keras.Sequential([layers.Dense(4, activation="relu", input_shape=(3,)), layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    y = np.zeros(10, np.int64)
    with pytest.raises(ValueError, match="NaN at row 0, column 0"):
        m.fit(np.full((10, 3), np.nan, np.float32), y, verbose=0)
    x = np.ones((10, 3), np.float32)
    x[7, 1] = np.inf
    with pytest.raises(ValueError, match="inf at row 7, column 1"):
        m.evaluate(x, y, verbose=0)
    x[7, 1] = 0.0
    assert np.isfinite(m.fit(x, y, epochs=1, verbose=0).history["loss"][0])
