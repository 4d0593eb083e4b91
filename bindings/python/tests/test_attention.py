"""keras.layers.MultiHeadAttention as self-attention, ``mha(x, x, use_causal_mask=True)``:
its predictions equal a NumPy float64 run of the same projections and masked softmax, a
tiny causal language model (Embedding → attention → Add → Dense) learns its sequences, and
what is not built yet (cross-attention, attention_mask) raises NotImplementedError."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


@pytest.fixture(autouse=True)
def keep_seed():
    before = keras.utils.seed()
    yield
    keras.utils.set_random_seed(before)


def numpy_attention(x, weights, heads, d, causal):
    wqkv, bqkv, wo, bo = (np.asarray(w, np.float64) for w in weights)
    qkv = x @ wqkv + bqkv
    hd = heads * d
    q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
    b, t, _ = x.shape
    split = lambda a: a.reshape(b, t, heads, d).transpose(0, 2, 1, 3)
    q, k, v = split(q), split(k), split(v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(b, t, hd)
    return o @ wo + bo


@pytest.mark.parametrize("causal", [True, False])
def test_predictions_equal_numpy_float64(causal):
    keras.utils.set_random_seed(2)
    t, e, heads, d = 11, 12, 3, 4
    x = keras.Input(shape=(t, e))
    mha = layers.MultiHeadAttention(num_heads=heads, key_dim=d)
    model = keras.Model(x, mha(x, x, use_causal_mask=causal))
    rng = np.random.default_rng(0)
    weights = [w + rng.standard_normal(w.shape).astype(np.float32) * 0.1 for w in model.get_weights()]
    model.set_weights(weights)
    xs = rng.standard_normal((3, t, e)).astype(np.float32)
    want = numpy_attention(xs.astype(np.float64), weights, heads, d, causal)
    np.testing.assert_allclose(model.predict(xs, verbose=0), want, rtol=1e-4, atol=1e-5)
    assert mha.get_config()["use_causal_mask"] is causal


def test_a_tiny_causal_language_model_learns():
    keras.utils.set_random_seed(3)
    v, t, n = 7, 8, 96
    rng = np.random.default_rng(1)
    starts = rng.integers(0, v, n)
    ids = (starts[:, None] + np.arange(t)) % v
    labels = (ids + 1) % v
    x = keras.Input(shape=(t,), dtype="int32")
    h = layers.Embedding(v, 16)(x)
    a = layers.MultiHeadAttention(2, 8)(h, h, use_causal_mask=True)
    logits = layers.Dense(v)(layers.Add()([h, a]))
    model = keras.Model(x, logits)
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(ids.astype(np.int32), labels.astype(np.int32), batch_size=16, epochs=25, verbose=0)
    assert hist.history["loss"][0] > 1.5
    assert hist.history["loss"][-1] < 0.1


def test_what_is_not_built_raises():
    x = keras.Input(shape=(4, 8))
    y = keras.Input(shape=(4, 8))
    with pytest.raises(NotImplementedError, match="self-attention"):
        layers.MultiHeadAttention(2, 4)(x, y)
    with pytest.raises(NotImplementedError, match="attention_mask"):
        layers.MultiHeadAttention(2, 4)(x, x, attention_mask=np.ones((4, 4)))
    with pytest.raises(ValueError, match="dropout"):
        layers.MultiHeadAttention(2, 4, dropout=0.1)
