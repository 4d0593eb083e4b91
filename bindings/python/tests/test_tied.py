"""Tied weights from Python: ``layers.Dense(units, use_bias=False, tied_to=owner)`` uses the
owner's matrix transposed (a GPT's output projection reading the token embedding; a suanli
extension, Keras has no such argument). A tied autoencoder predicts ``tanh(x·W)·Wᵀ``, trains
like a NumPy float64 run in which W's gradient is the sum of both uses', holds one weight,
keeps the tie through save/load, and what cannot be tied raises ValueError."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers

D, H, N, B = 6, 3, 16, 8


@pytest.fixture(autouse=True)
def keep_seed():
    before = keras.utils.seed()
    yield
    keras.utils.set_random_seed(before)


def autoencoder():
    x = keras.Input(shape=(D,))
    enc = layers.Dense(H, activation="tanh", use_bias=False)
    out = layers.Dense(D, use_bias=False, tied_to=enc)(enc(x))
    return keras.Model(x, out), enc


def reference(w, x, lr, steps):
    """Float64 SGD on mean squared error of reconstructing x, batches of B in order."""
    w = np.asarray(w, np.float64)
    x = np.asarray(x, np.float64)
    for s in range(steps):
        a = x[(s * B) % N:(s * B) % N + B]
        h = np.tanh(a @ w)
        z = h @ w.T
        dz = 2.0 * (z - a) / z.size
        g = dz.T @ h  # the projection's use, in W's layout
        g += a.T @ ((dz @ w) * (1.0 - h * h))  # the encoder's
        w = w - lr * g
    return w


def test_a_tied_autoencoder_predicts_and_trains_like_float64():
    keras.utils.set_random_seed(3)
    model, enc = autoencoder()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D)).astype(np.float32)
    (w,) = model.get_weights()
    assert w.shape == (D, H)
    assert model.count_params() == D * H
    want = np.tanh(x.astype(np.float64) @ w) @ w.T
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    model.fit(x, x, batch_size=B, epochs=3, shuffle=False, verbose=0)
    (got,) = model.get_weights()
    ref = reference(w, x, 0.5, 3 * N // B)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    assert np.abs(ref - w).max() > 1e-3
    # The config names the owner by the name the model gave it.
    assert model.layers[-1].get_config()["tied_to"] == enc.name == "dense"


def test_the_tie_survives_save_and_load(tmp_path):
    keras.utils.set_random_seed(4)
    model, _ = autoencoder()
    x = np.random.default_rng(1).standard_normal((5, D)).astype(np.float32)
    path = str(tmp_path / "tied.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.count_params() == D * H
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_sequential_ties_by_layer_object_or_name():
    keras.utils.set_random_seed(5)
    enc = layers.Dense(H, activation="tanh", use_bias=False)
    by_object = keras.Sequential([keras.Input(shape=(D,)), enc, layers.Dense(D, use_bias=False, tied_to=enc)])
    by_object.build()
    by_name = keras.Sequential([keras.Input(shape=(D,)), layers.Dense(H, activation="tanh", use_bias=False, name="e"), layers.Dense(D, use_bias=False, tied_to="e")])
    by_name.build()
    assert by_object.count_params() == by_name.count_params() == D * H


def test_what_cannot_be_tied_raises_value_error():
    with pytest.raises(ValueError, match="use_bias"):
        layers.Dense(D, tied_to="dense")  # a bias of its own (use_bias defaults to True)
    x = keras.Input(shape=(D,))
    enc = layers.Dense(H, use_bias=False)
    h = enc(x)
    with pytest.raises(ValueError, match="tied_to"):
        keras.Model(x, layers.Dense(D, use_bias=False, tied_to="nowhere")(h)).build()
    other = layers.Dense(H, use_bias=False)
    with pytest.raises(ValueError, match="before it"):
        keras.Model(x, layers.Dense(D, use_bias=False, tied_to=other)(h)).build()
    # A matrix of another shape: enc's is (6, 3); Dense(4) reading size 3 needs (4, 3).
    with pytest.raises(ValueError, match=r"\[4, 3\]"):
        keras.Model(x, layers.Dense(D - 2, use_bias=False, tied_to=enc)(h)).build()
