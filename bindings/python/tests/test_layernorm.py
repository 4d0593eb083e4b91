"""``keras.layers.LayerNormalization`` from Python: the class comes from the Rust registry
with Keras's arguments and defaults; its predictions match a NumPy float64 layer norm over
the last axis (each position of a (batch, T, E) input on its own), with γ and β set, without
β (nanoGPT's ``bias=False``) and without either; only the last axis is accepted; a model
with it trains and keeps its predictions through save and load."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers

T, E = 5, 24


def layer_norm(x, gamma, beta, eps):
    """Float64 layer normalisation over the last axis, biased variance (Keras's)."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * np.asarray(gamma, np.float64)
    if beta is not None:
        y = y + np.asarray(beta, np.float64)
    return y


def test_the_class_has_keras_defaults():
    ln = layers.LayerNormalization()
    config = ln.get_config()
    assert config["axis"] == -1
    assert config["epsilon"] == pytest.approx(1e-3)
    assert config["center"] is True and config["scale"] is True
    assert config["beta_initializer"] == "zeros" and config["gamma_initializer"] == "ones"


@pytest.mark.parametrize(
    "center,scale,eps",
    [(True, True, 1e-3), (False, True, 1e-5), (False, False, 1e-3), (True, False, 1e-3)],
)
def test_predictions_match_numpy(rng, center, scale, eps):
    m = keras.Sequential([
        keras.Input(shape=(T, E)),
        layers.LayerNormalization(epsilon=eps, center=center, scale=scale),
    ])
    weights = m.get_weights()
    assert len(weights) == int(center) + int(scale)
    gamma = (1.0 + rng.normal(size=E)).astype(np.float32) if scale else None
    beta = rng.normal(size=E).astype(np.float32) if center else None
    m.set_weights([w for w in (gamma, beta) if w is not None])
    # Some rows far from zero, where a one-pass variance would lose its digits.
    x = rng.normal(size=(7, T, E)).astype(np.float32)
    x[::2] += np.float32(30.0)
    got = m.predict(x, verbose=0)
    want = layer_norm(x, gamma, beta, eps)
    assert got.shape == x.shape
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err < 2e-5, err


def test_only_the_last_axis():
    layers.LayerNormalization(axis=2)  # the last axis of a (batch, T, E) input, by index
    with pytest.raises(ValueError, match="expected -1 or 2.*found 1"):
        layers.LayerNormalization(axis=1)(keras.Input(shape=(T, E)))
    with pytest.raises(ValueError, match="epsilon"):
        layers.LayerNormalization(epsilon=0.0)


def test_a_model_trains_and_survives_save_and_load(rng, tmp_path):
    x = rng.normal(size=(128, T, E)).astype(np.float32)
    y = (x[:, :, :3].sum(axis=(1, 2)) > 0).astype(np.int64)
    m = keras.Sequential([
        keras.Input(shape=(T, E)),
        layers.Dense(16, activation="tanh"),
        layers.LayerNormalization(),
        layers.Flatten(),
        layers.Dense(2, activation="softmax"),
    ])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    history = m.fit(x, y, epochs=5, batch_size=16, verbose=0)
    loss = history.history["loss"]
    assert loss[-1] < loss[0], loss
    path = tmp_path / "model.safetensors"
    m.save(str(path))
    back = keras.models.load_model(str(path))
    np.testing.assert_array_equal(back.predict(x[:9], verbose=0), m.predict(x[:9], verbose=0))
