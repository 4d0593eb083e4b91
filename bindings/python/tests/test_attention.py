"""keras.layers.MultiHeadAttention as self-attention, ``mha(x, x, use_causal_mask=True)``:
its predictions equal a NumPy float64 run of the same projections and masked softmax, a
tiny causal language model (Embedding → attention → Add → Dense) learns its sequences;
cross-attention, ``value_dim``, ``attention_mask`` and dropout equal NumPy too (or, for
dropout, leave inference untouched), and what is not built (return_attention_scores) raises
NotImplementedError."""

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


def numpy_general(q_in, v_in, k_in, mask, weights, heads, dk, dv, causal):
    """The layer in float64 for cross-attention: query, value and key inputs (k_in None:
    the key is the value, one packed kv kernel), an optional 0/1 mask (batch, Tq, Tk)."""
    w = [np.asarray(a, np.float64) for a in weights]
    hk, hv = heads * dk, heads * dv
    q = q_in @ w[0] + w[1]
    if k_in is None:
        kv = v_in @ w[2] + w[3]
        k, v = kv[..., :hk], kv[..., hk:]
    else:
        k, v = k_in @ w[2] + w[3], v_in @ w[4] + w[5]
    b, tq, _ = q_in.shape
    tk = v_in.shape[1]
    split = lambda a, t, d: a.reshape(b, t, heads, d).transpose(0, 2, 1, 3)
    q, k, v = split(q, tq, dk), split(k, tk, dk), split(v, tk, dv)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)
    seen = np.ones((b, 1, tq, tk), bool)
    if causal:
        seen &= np.tril(np.ones((tq, tk), bool))
    if mask is not None:
        seen &= mask[:, None].astype(bool)
    s = np.where(seen, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(b, tq, hv)
    return o @ w[-2] + w[-1]


@pytest.mark.parametrize("separate_key", [False, True])
def test_cross_attention_with_a_mask_equals_numpy_float64(separate_key):
    keras.utils.set_random_seed(4)
    tq, tk, heads, dk, dv = 5, 7, 2, 4, 3
    q_in = keras.Input(shape=(tq, 6))
    v_in = keras.Input(shape=(tk, 8))
    k_in = keras.Input(shape=(tk, 5)) if separate_key else None
    m_in = keras.Input(shape=(tq, tk))
    mha = layers.MultiHeadAttention(num_heads=heads, key_dim=dk, value_dim=dv)
    out = mha(q_in, v_in, key=k_in, attention_mask=m_in, use_causal_mask=True)
    inputs = [q_in, v_in] + ([k_in] if separate_key else []) + [m_in]
    model = keras.Model(inputs, out)
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal(w.shape).astype(np.float32) * 0.5 for w in model.get_weights()]
    model.set_weights(weights)
    xs = [rng.standard_normal((3, tq, 6)).astype(np.float32), rng.standard_normal((3, tk, 8)).astype(np.float32)]
    if separate_key:
        xs.append(rng.standard_normal((3, tk, 5)).astype(np.float32))
    mask = (rng.random((3, tq, tk)) > 0.4).astype(np.float32)
    mask[..., 0] = 1  # every query sees key 0
    xs.append(mask)
    f64 = [a.astype(np.float64) for a in xs]
    want = numpy_general(f64[0], f64[1], f64[2] if separate_key else None, mask, weights, heads, dk, dv, True)
    np.testing.assert_allclose(model.predict(xs, verbose=0), want, rtol=1e-4, atol=1e-5)
    assert model.output_shape == (None, tq, 6)


def test_dropout_leaves_inference_untouched_and_trains():
    keras.utils.set_random_seed(6)
    x = keras.Input(shape=(6, 8))
    a = layers.MultiHeadAttention(2, 4, dropout=0.3)
    b = layers.MultiHeadAttention(2, 4)
    ma, mb = keras.Model(x, a(x, x)), keras.Model(x, b(x, x))
    mb.set_weights(ma.get_weights())
    xs = np.random.default_rng(7).standard_normal((4, 6, 8)).astype(np.float32)
    np.testing.assert_array_equal(ma.predict(xs, verbose=0), mb.predict(xs, verbose=0))
    # Training with dropout: per-position logits, as a language model has them.
    logits = layers.Dense(5)(layers.MultiHeadAttention(2, 4, dropout=0.3)(x, x))
    mt = keras.Model(x, logits)
    mt.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    labels = np.random.default_rng(8).integers(0, 5, (4, 6)).astype(np.int32)
    hist = mt.fit(xs, labels, epochs=2, verbose=0)
    assert all(np.isfinite(hist.history["loss"]))
    # Regression targets of the output's (samples, T, E) shape, as Keras takes them.
    ma.compile(optimizer="sgd", loss="mse")
    hist = ma.fit(xs, np.zeros((4, 6, 8), np.float32), epochs=2, verbose=0)
    assert hist.history["loss"][1] < hist.history["loss"][0]
    with pytest.raises(ValueError, match="target rows of 48 values"):
        ma.fit(xs, np.zeros((4, 6, 7), np.float32), epochs=1, verbose=0)


def test_what_does_not_fit_raises():
    x = keras.Input(shape=(4, 8))
    y = keras.Input(shape=(5, 8))
    with pytest.raises(NotImplementedError, match="return_attention_scores"):
        layers.MultiHeadAttention(2, 4)(x, x, return_attention_scores=True)
    with pytest.raises(ValueError, match="mask"):
        layers.MultiHeadAttention(2, 4)(x, x, attention_mask=keras.Input(shape=(4, 3)))
    with pytest.raises(ValueError, match="dropout"):
        layers.MultiHeadAttention(2, 4, dropout=1.5)
    with pytest.raises(TypeError, match="mha"):
        layers.MultiHeadAttention(2, 4)(x)
    # Cross-attention: the output has the query's length.
    assert layers.MultiHeadAttention(2, 4)(x, y).shape == (None, 4, 8)
