"""keras.Model with several outputs: a loss per output (a list, a dict keyed by the outputs'
names, or one for all) and ``loss_weights``, targets as a list or dict, ``{name}_loss`` and
``{name}_accuracy`` in the history, ``predict`` returning one array per output, files
keeping every output; a head weighted 0 leaves the rest training exactly as a model without
it; and targets or losses that do not fit say so."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


def data(rng, n=128):
    y = rng.integers(0, 3, n)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    x[np.arange(n), y] += 1.5
    t = np.stack([x[:, 0] - 0.5 * x[:, 1], 0.3 * rng.standard_normal(n)], axis=1).astype(np.float32)
    return x, y, t


def heads(as_dict=False):
    keras.utils.set_random_seed(7)
    x = keras.Input(shape=(6,), name="x")
    h = layers.Dense(8, activation="relu")(x)
    cls = layers.Dense(3, activation="softmax", name="cls")(h)
    reg = layers.Dense(2, name="reg")(h)
    return keras.Model(x, {"cls": cls, "reg": reg} if as_dict else [cls, reg])


def test_a_head_weighted_zero_leaves_the_rest_as_a_model_without_it(rng):
    x, y, t = data(rng)
    both = heads()
    both.compile(optimizer=keras.optimizers.SGD(0.1), loss=["sparse_categorical_crossentropy", "mse"], loss_weights=[1.0, 0.0])
    keras.utils.set_random_seed(7)
    xi = keras.Input(shape=(6,), name="x")
    one = keras.Model(xi, layers.Dense(3, activation="softmax")(layers.Dense(8, activation="relu")(xi)))
    one.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    one.set_weights(both.get_weights()[:4])
    h2 = both.fit(x, [y, t], epochs=2, batch_size=32, verbose=0, shuffle=False)
    h1 = one.fit(x, y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    for a, b in zip(both.get_weights()[:4], one.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert h2.history["cls_loss"] == h1.history["loss"]
    assert h2.history["loss"] == h1.history["loss"]
    assert h2.history["cls_accuracy"] and "reg_accuracy" not in h2.history
    assert all(v > 0 for v in h2.history["reg_loss"])


def test_lists_and_dicts_are_the_same_run(rng):
    x, y, t = data(rng)
    runs = []
    for as_dict in (False, True):
        m = heads(as_dict)
        if as_dict:
            m.compile(optimizer="adam", loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"}, loss_weights={"cls": 1.0, "reg": 0.5})
            h = m.fit(x, {"reg": t, "cls": y}, epochs=2, batch_size=32, verbose=0, shuffle=False, validation_data=(x, {"cls": y, "reg": t}))
        else:
            m.compile(optimizer="adam", loss=["sparse_categorical_crossentropy", "mse"], loss_weights=[1.0, 0.5])
            h = m.fit(x, [y, t], epochs=2, batch_size=32, verbose=0, shuffle=False, validation_data=(x, [y, t]))
        runs.append((h.history, m.get_weights()))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(a, b)
    hist = runs[0][0]
    # The total is the weighted sum of the outputs' losses.
    for e in range(2):
        assert hist["loss"][e] == pytest.approx(hist["cls_loss"][e] + 0.5 * hist["reg_loss"][e], rel=1e-6)
        assert hist["val_loss"][e] == pytest.approx(hist["val_cls_loss"][e] + 0.5 * hist["val_reg_loss"][e], rel=1e-6)


def test_predict_gives_an_array_per_output_and_files_keep_them(rng, tmp_path):
    x, y, t = data(rng)
    m = heads()
    m.compile(optimizer="adam", loss=["sparse_categorical_crossentropy", "mse"])
    m.fit(x, [y, t], epochs=1, verbose=0)
    p = m.predict(x[:10], verbose=0)
    assert isinstance(p, list) and [a.shape for a in p] == [(10, 3), (10, 2)]
    np.testing.assert_allclose(p[0].sum(axis=1), 1.0, rtol=1e-5)
    logs = m.evaluate(x, [y, t], verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx(logs["cls_loss"] + logs["reg_loss"], rel=1e-6)
    # Keras's list: the total, then each output's loss in output order.
    assert m.evaluate(x, [y, t], verbose=0) == [logs["loss"], logs["cls_loss"], logs["reg_loss"]]
    path = str(tmp_path / "heads.safetensors")
    m.save(path)
    loaded = keras.models.load_model(path)
    q = loaded.predict(x[:10], verbose=0)
    for a, b in zip(p, q):
        np.testing.assert_array_equal(a, b)


def test_outputs_that_do_not_fit_say_so(rng):
    x, y, t = data(rng)
    m = heads()
    with pytest.raises(ValueError, match=r"2 outputs \['cls', 'reg'\]"):
        m.compile(optimizer="adam", loss=["mse"] * 3)
    with pytest.raises(ValueError, match="output names"):
        m.compile(optimizer="adam", loss={"cls": "mse", "nope": "mse"})
    with pytest.raises(ValueError, match="output 'reg'"):
        m.compile(optimizer="adam", loss=["sparse_categorical_crossentropy", "mse"], metrics=["accuracy"])
    m.compile(optimizer="adam", loss=["sparse_categorical_crossentropy", "mse"])
    with pytest.raises(ValueError, match=r"2 outputs"):
        m.fit(x, y, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="same number of samples"):
        m.fit(x, [y, t[:10]], epochs=1, verbose=0)
    with pytest.raises(ValueError):
        m.fit(x, [t, y], epochs=1, verbose=0)
    # Still usable.
    m.fit(x, [y, t], epochs=1, verbose=0)
