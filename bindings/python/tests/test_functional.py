"""keras.Model(inputs, outputs), the functional API: keras.io's first functional example runs,
a residual block and the merge layers train, a graph equals the same network built as a
Sequential when it is a chain, files keep the graph, and what is not supported says so."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


def blobs(rng, n=192, d=8, classes=3):
    y = rng.integers(0, classes, n)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x[np.arange(n), y] += 3.0  # separable enough that 90% is well within reach
    return x, y


def test_keras_io_functional_guide_first_model(mnist, tmp_path):
    # keras.io's "The Functional API": the MNIST MLP, as written there.
    inputs = keras.Input(shape=(784,))
    dense = layers.Dense(64, activation="relu")
    x = dense(inputs)
    x = layers.Dense(64, activation="relu")(x)
    outputs = layers.Dense(10)(x)
    model = keras.Model(inputs=inputs, outputs=outputs, name="mnist_model")
    assert x.shape == (None, 64)
    lines = []
    model.summary(print_fn=lines.append)
    assert 'Model: "mnist_model"' in lines[0]
    assert model.count_params() == 784 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10
    assert model.get_layer("dense_1") is model.layers[1]
    # "Training, evaluation, and inference", on a subset.
    (x_train, y_train), (x_test, y_test) = mnist
    x_train = x_train[:3000].reshape(3000, 784).astype("float32") / 255
    x_test = x_test[:1000].reshape(1000, 784).astype("float32") / 255
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=keras.optimizers.RMSprop(),
        metrics=["accuracy"],
    )
    history = model.fit(x_train, y_train[:3000], batch_size=64, epochs=2, validation_split=0.2, verbose=0)
    test_scores = model.evaluate(x_test, y_test[:1000], verbose=0)
    assert test_scores[1] > 0.8, test_scores
    assert len(history.history["val_loss"]) == 2
    # "Save and serialize": the guide's .keras path holds suanli's file.
    model.save(tmp_path / "my_model.keras")
    del model
    model = keras.models.load_model(tmp_path / "my_model.keras")
    assert abs(model.evaluate(x_test, y_test[:1000], verbose=0)[1] - test_scores[1]) < 1e-6


def test_a_residual_block_trains_saves_and_loads(rng, tmp_path):
    keras.utils.set_random_seed(1)  # other tests set it too
    x, y = blobs(rng)
    inputs = keras.Input(shape=(8,), name="features")
    h = layers.Dense(16, activation="relu")(inputs)
    r = layers.Dense(16, activation="relu")(h)
    r = layers.Dense(16)(r)
    s = layers.Add()([h, r])
    c = layers.Concatenate()([s, h])
    outputs = layers.Dense(3, activation="softmax")(c)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "Connected to" in text and "features (InputLayer)" in text
    assert "dense[0][0], dense_2[0][0]" in text, text
    hist = model.fit({"features": x}, y, epochs=8, batch_size=32, verbose=0)
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0], hist.history["loss"]
    assert hist.history["accuracy"][-1] > 0.9
    p = model.predict([x], verbose=0)
    np.testing.assert_array_equal(p, model.predict(x, verbose=0))
    path = tmp_path / "res.safetensors"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, keras.Model)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), p)
    more = loaded.fit(x, y, epochs=1, batch_size=32, verbose=0)
    assert np.isfinite(more.history["loss"][0])


def test_every_merge_layer_against_numpy(rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    inputs = keras.Input(shape=(4,))
    a = layers.Dense(4, activation="tanh")(inputs)
    b = layers.Dense(4, activation="sigmoid")(inputs)
    merged = {
        "add": (layers.Add()([a, b]), lambda p, q: p + q),
        "subtract": (layers.Subtract()([a, b]), lambda p, q: p - q),
        "multiply": (layers.Multiply()([a, b]), lambda p, q: p * q),
        "average": (layers.Average()([a, b]), lambda p, q: (p + q) / 2),
        "maximum": (layers.Maximum()([a, b]), np.maximum),
        "concatenate": (layers.Concatenate(axis=-1)([a, b]), lambda p, q: np.concatenate([p, q], -1)),
    }
    # Each merge as its own model over the same two branches' weights.
    for name, (out, ref) in merged.items():
        model = keras.Model(inputs, out)
        wa, ba, wb, bb = model.get_weights()
        pa = np.tanh(x.astype(np.float64) @ wa + ba)
        pb = 1 / (1 + np.exp(-(x.astype(np.float64) @ wb + bb)))
        np.testing.assert_allclose(model.predict(x, verbose=0), ref(pa, pb), rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_chain_as_a_graph_equals_sequential(rng):
    x, y = blobs(rng)
    keras.utils.set_random_seed(3)
    seq = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(12, activation="relu"), layers.Dense(3, activation="softmax")])
    keras.utils.set_random_seed(3)
    inputs = keras.Input(shape=(8,))
    outputs = layers.Dense(3, activation="softmax")(layers.Dense(12, activation="relu")(inputs))
    fun = keras.Model(inputs, outputs)
    for m in (seq, fun):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        m.fit(x, y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    for a, b in zip(seq.get_weights(), fun.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_what_is_not_supported_says_so(rng):
    class Sub(keras.Model):
        def __init__(self):
            super().__init__()

    with pytest.raises(NotImplementedError, match="functional API"):
        Sub()
    inputs = keras.Input(shape=(4,))
    other = keras.Input(shape=(4,), name="other")
    a = layers.Dense(3)(inputs)
    b = layers.Dense(5)(inputs)
    with pytest.raises(ValueError, match=r"\(3,\), \(5,\)"):
        layers.Add()([a, b])
    # Calling a layer object again shares its weights (test_functional_shared.py); an input
    # that gives them other shapes is refused at the call.
    shared = layers.Dense(3)
    shared(inputs)
    with pytest.raises(ValueError, match=r"first called on an input of shape \(None, 4\)"):
        shared(b)
    with pytest.raises(ValueError, match="not the model's"):
        keras.Model(inputs, layers.Add()([a, layers.Dense(3)(other)]))
    with pytest.raises(ValueError, match="input 1 .* not read"):
        keras.Model([inputs, other], a)
    with pytest.raises(TypeError, match="functional API"):
        layers.Dense(3)(np.zeros((2, 4)))
    m = keras.Model(inputs, a)
    with pytest.raises(ValueError, match="input name"):
        m.predict({"nope": np.zeros((2, 4), np.float32)}, verbose=0)


def test_labels_per_position_average_over_every_position(rng):
    # A (positions, classes) output with (samples, positions) integer labels, as a sequence
    # model's per-token logits: the loss is the mean over every position of every sample.
    n, t, f, c = 24, 5, 4, 3
    x = rng.standard_normal((n, t, f)).astype(np.float32)
    y = rng.integers(0, c, (n, t))
    inputs = keras.Input(shape=(t, f))
    logits = layers.Dense(c)(layers.Dense(8, activation="tanh")(inputs))
    model = keras.Model(inputs, logits)
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    z = model.predict(x, verbose=0).astype(np.float64)
    assert z.shape == (n, t, c)
    logp = z - z.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    want = -np.take_along_axis(logp, y[..., None], -1).mean()
    loss, acc = model.evaluate(x, y, verbose=0)
    assert abs(loss - want) < 1e-5 * want, (loss, want)
    assert abs(acc - (z.argmax(-1) == y).mean()) < 1e-9
    h = model.fit(x, y, epochs=10, batch_size=8, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    with pytest.raises(ValueError, match="labels per sample"):
        model.fit(x, y[:, :4], epochs=1, verbose=0)
