"""Shared layers in keras.Model(inputs, outputs): one layer object called on two inputs holds
one set of weights, as in Keras. A siamese model trains like a NumPy float64 run of the same
SGD steps (the shared kernel's gradient is the sum of both calls'), counts its weights once,
lists the layer once, keeps the sharing through save/load, and a second call whose input does
not fit the weights says so, naming both shapes."""

import numpy as np
import pytest

import suanli
from suanli import _native, keras
from suanli.keras import layers

D, H, N, B = 5, 4, 16, 8


@pytest.fixture(autouse=True)
def keep_seed():
    # These tests set seeds of their own; later files see the seed they would without them.
    before = keras.utils.seed()
    yield
    keras.utils.set_random_seed(before)


def siamese():
    a, b = keras.Input(shape=(D,), name="a"), keras.Input(shape=(D,), name="b")
    shared = layers.Dense(H, activation="tanh")
    head = layers.Dense(1)
    out = head(layers.Subtract()([shared(a), shared(b)]))
    return keras.Model([a, b], out), shared, head


def data(rng):
    xa = rng.standard_normal((N, D)).astype(np.float32)
    xb = rng.standard_normal((N, D)).astype(np.float32)
    y = (xa[:, :1] - xb[:, :1]).astype(np.float32)
    return xa, xb, y


def reference(weights, xa, xb, y, lr, steps, summed=True):
    """Float64 forward and backward of the siamese model, ``steps`` SGD steps of batches of B
    in order, mean squared error (``summed`` false: the shared weights stepped by the first
    call's gradient alone, a wrong model the test must tell apart)."""
    w, c, v, e = (np.asarray(t, np.float64) for t in weights)
    xa, xb, y = (np.asarray(t, np.float64) for t in (xa, xb, y))
    for s in range(steps):
        i = slice((s * B) % N, (s * B) % N + B)
        a, b, t = xa[i], xb[i], y[i]
        ha, hb = np.tanh(a @ w + c), np.tanh(b @ w + c)
        d = ha - hb
        o = d @ v + e
        go = 2.0 * (o - t) / o.size
        gv, ge = d.T @ go, go.sum(0)
        gd = go @ v.T
        za, zb = gd * (1 - ha**2), -gd * (1 - hb**2)
        # One kernel, two calls: its gradient is the sum of both.
        gw, gc = a.T @ za + summed * (b.T @ zb), za.sum(0) + summed * zb.sum(0)
        w, c, v, e = w - lr * gw, c - lr * gc, v - lr * gv, e - lr * ge
    return [w, c, v, e]


def predict(weights, xa, xb):
    w, c, v, e = (np.asarray(t, np.float64) for t in weights)
    return (np.tanh(xa @ w + c) - np.tanh(xb @ w + c)) @ v + e


def test_a_layer_called_twice_trains_like_a_float64_run_of_the_same_steps(rng):
    keras.utils.set_random_seed(7)
    model, shared, head = siamese()
    # One layer object, listed once; one set of weights, counted once.
    assert [type(l).__name__ for l in model.layers] == ["Dense", "Subtract", "Dense"]
    assert model.layers[0] is shared and model.layers[2] is head
    assert model.count_params() == D * H + H + H + 1
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    w0 = model.get_weights()
    assert [a.shape for a in w0] == [(D, H), (H,), (H, 1), (1,)]
    xa, xb, y = data(rng)
    np.testing.assert_allclose(model.predict([xa, xb], verbose=0), predict(w0, xa, xb), rtol=1e-5, atol=1e-6)
    epochs = 3
    model.fit([xa, xb], y, batch_size=B, epochs=epochs, shuffle=False, verbose=0)
    want = reference(w0, xa, xb, y, 0.1, epochs * N // B)
    got = model.get_weights()
    for k, (g, r) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-7, err_msg=f"weight {k}")
    # The layer objects see the model's weights: the shared Dense's are the first two.
    np.testing.assert_array_equal(shared.get_weights()[0], got[0])
    np.testing.assert_array_equal(head.get_weights()[1], got[3])
    # One call's gradient alone would be a different model: the test tells them apart.
    wrong = reference(w0, xa, xb, y, 0.1, epochs * N // B, summed=False)
    assert not np.allclose(got[0], wrong[0], rtol=1e-3)


def test_a_shared_stack_counts_and_sets_its_weights_once(rng):
    keras.utils.set_random_seed(3)
    a, b = keras.Input(shape=(D,)), keras.Input(shape=(D,))
    d1, d2 = layers.Dense(6, activation="relu"), layers.Dense(3)
    tower = lambda x: d2(d1(x))  # noqa: E731 (a Sequential-like stack of shared layers)
    out = layers.Dense(2, activation="softmax")(layers.Concatenate()([tower(a), tower(b)]))
    model = keras.Model([a, b], out)
    assert model.layers[:2] == [d1, d2] and len(model.layers) == 4
    assert model.count_params() == (D * 6 + 6) + (6 * 3 + 3) + (6 * 2 + 2)
    assert len(model.get_weights()) == 6
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert text.count("dense (Dense)") == 1 and "dense[1][0]" in text, text
    # Setting the weights sets them for both calls.
    new = [np.full(w.shape, 0.1 * (k + 1), np.float32) for k, w in enumerate(model.get_weights())]
    model.set_weights(new)
    xa, xb, _ = data(rng)
    h = lambda x: (np.maximum(x @ new[0] + new[1], 0) @ new[2] + new[3])  # noqa: E731
    z = np.concatenate([h(xa), h(xb)], 1) @ new[4] + new[5]
    p = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(model.predict([xa, xb], verbose=0), p / p.sum(1, keepdims=True), rtol=1e-5)
    # Freezing the shared layer freezes every call of it.
    d1.trainable = False
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5), loss="sparse_categorical_crossentropy")
    model.fit([xa, xb], rng.integers(0, 2, N), batch_size=B, epochs=1, verbose=0)
    np.testing.assert_array_equal(d1.get_weights()[0], new[0])
    assert not np.array_equal(d2.get_weights()[0], new[2])


def test_save_and_load_keep_one_layer_with_two_calls(rng, tmp_path):
    keras.utils.set_random_seed(11)
    model, _, _ = siamese()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    xa, xb, y = data(rng)
    model.fit([xa, xb], y, batch_size=B, epochs=1, shuffle=False, verbose=0)
    path = tmp_path / "siamese.safetensors"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict([xa, xb], verbose=0), model.predict([xa, xb], verbose=0))
    assert loaded.count_params() == model.count_params()
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    for g, w in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(g, w)
    # Still one set of weights: training the loaded model moves both calls together, as
    # the float64 run does.
    loaded.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    w0 = loaded.get_weights()
    loaded.fit([xa, xb], y, batch_size=B, epochs=1, shuffle=False, verbose=0)
    for g, r in zip(loaded.get_weights(), reference(w0, xa, xb, y, 0.1, N // B)):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loaded.predict([xa, xb], verbose=0), predict(loaded.get_weights(), xa, xb), rtol=1e-5, atol=1e-6)


def test_a_second_call_that_does_not_fit_names_both_shapes():
    shared = layers.Dense(3)
    shared(keras.Input(shape=(4,)))
    with pytest.raises(ValueError, match=r"\(None, 4\).*\(None, 6\)"):
        shared(keras.Input(shape=(6,)))
    # Another call on a shape that gives the same weights is fine.
    assert shared(keras.Input(shape=(7, 4))).shape == (None, 7, 3)
    conv = layers.Conv2D(2, 3)
    conv(keras.Input(shape=(8, 8, 1)))
    assert conv(keras.Input(shape=(10, 10, 1))).shape == (None, 8, 8, 2)
    with pytest.raises(ValueError, match=r"\(None, 8, 8, 1\).*\(None, 8, 8, 3\)"):
        conv(keras.Input(shape=(8, 8, 3)))


def test_the_native_call_api_refuses_what_cannot_be_another_call():
    m = _native.Model(suanli.current_device(), seed=0, input_shape=[4])
    m.add_input([6], "other")
    m.add_node('{"class_name": "Dense", "config": {"units": 3}}', [-1])
    with pytest.raises(ValueError, match="layer 5"):
        m.add_call(5, [-2])
    with pytest.raises(ValueError, match=r"\(4,\).*\(6,\)"):
        m.add_call(0, [-2])
    m.add_call(0, [-1])
    assert len(m) == 2 and m.param_count == 4 * 3 + 3
    assert [n for n, _ in m.weights()] == ["dense/kernel", "dense/bias"]
