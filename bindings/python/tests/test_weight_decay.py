"""AdamW with ``optimizer.exclude_from_weight_decay(var_names=...)``: the excluded weights
are not decayed (against NumPy running the same steps), a list that names no weight is
refused, and ``var_list`` says what to give instead."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers

LR, WD = 0.05, 0.3


def reference(w, b, x, y, steps, bias_decays):
    w, b = w.astype(np.float64), b.astype(np.float64)
    p = [w, b]
    m = [np.zeros_like(w), np.zeros_like(b)]
    v = [np.zeros_like(w), np.zeros_like(b)]
    x = x.astype(np.float64)
    for t in range(1, steps + 1):
        z = x @ p[0] + p[1]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        dz = (prob - np.eye(3)[y]) / len(x)
        g = [x.T @ dz, dz.sum(axis=0)]
        step = LR / (1 - 0.9**t)
        bc2 = np.sqrt(1 - 0.999**t)
        for k in range(2):
            if k == 0 or bias_decays:
                p[k] = p[k] * (1 - LR * WD)
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            v[k] = 0.999 * v[k] + 0.001 * g[k] ** 2
            p[k] = p[k] - step * m[k] / (np.sqrt(v[k]) / bc2 + 1e-7)
    return p


@pytest.mark.parametrize("exclude", [None, ["bias"], ["layer_norm", "bias"]])
def test_excluded_weights_are_not_decayed(rng, exclude):
    x = rng.standard_normal((48, 5)).astype(np.float32)
    y = rng.integers(0, 3, 48)
    model = keras.Sequential([keras.Input(shape=(5,)), layers.Dense(3, activation="softmax")])
    opt = keras.optimizers.AdamW(learning_rate=LR, weight_decay=WD)
    if exclude:
        opt.exclude_from_weight_decay(var_names=exclude)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    w0, b0 = model.get_weights()
    model.fit(x, y, epochs=3, batch_size=48, shuffle=False, verbose=0)
    want = reference(w0, b0, x, y, 3, bias_decays=exclude is None)
    for got, ref in zip(model.get_weights(), want):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-6)
    # The other reading of the bias is measurably different, so the check means something.
    other = reference(w0, b0, x, y, 3, bias_decays=exclude is not None)
    assert np.abs(model.get_weights()[1] - other[1]).max() > 1e-4


def test_names_that_match_nothing_and_var_list_say_so():
    model = keras.Sequential([keras.Input(shape=(5,)), layers.Dense(3)])
    opt = keras.optimizers.AdamW()
    opt.exclude_from_weight_decay(var_names=["bais"])
    with pytest.raises(ValueError, match="weight's name"):
        model.compile(optimizer=opt, loss="mse")
    with pytest.raises(NotImplementedError, match="var_names"):
        keras.optimizers.AdamW().exclude_from_weight_decay(var_list=[object()])
