"""Metrics on a keras.Model of two outputs, in Keras's three forms: one list every output
gets (``metrics=["mae"]``), a list of lists and a dict keyed by the outputs' names, reported
as ``{output}_{metric}`` (and ``val_...``) in the History and ``evaluate(return_dict=True)``,
each against NumPy on ``predict``'s arrays for the same rows; ``evaluate``'s list is
Keras's; and a metric an output's loss cannot give is refused naming the output."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


def data(rng, n):
    x = rng.standard_normal((n, 5)).astype(np.float32)
    labels = (x[:, :3] + 0.7 * rng.standard_normal((n, 3)) > 0).astype(np.float32)
    values = np.stack([x[:, 3] - 0.5 * x[:, 4], 0.2 * x[:, 0]], axis=1).astype(np.float32)
    return x, labels, values


def two_outputs():
    """x(5) → Dense(8, tanh) → [tags: Dense(3, sigmoid), value: Dense(2)]."""
    keras.utils.set_random_seed(3)
    x = keras.Input(shape=(5,), name="x")
    h = layers.Dense(8, activation="tanh")(x)
    tags = layers.Dense(3, activation="sigmoid", name="tags")(h)
    value = layers.Dense(2, name="value")(h)
    return keras.Model(x, [tags, value])


def compile_(m, metrics):
    m.compile(optimizer=keras.optimizers.Adam(0.02), loss=["binary_crossentropy", "mse"], loss_weights=[1.0, 0.5], metrics=metrics)


def auc(p, t, n):
    """Keras's ROC AUC: thresholds -eps, k/(n-1), 1+eps; trapezoids between the points."""
    th = np.array([-1e-7] + [(k + 1) / (n - 1) for k in range(n - 2)] + [1 + 1e-7])
    p, t = np.clip(p.ravel(), 0, 1).astype(np.float64), t.ravel() > 0.5
    above = p[None, :] > th[:, None]
    tpr, fpr = (above & t).sum(1) / t.sum(), (above & ~t).sum(1) / (~t).sum()
    return float(((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2).sum())


def numpy_metric(name, p, t):
    p, t = p.astype(np.float64), t.astype(np.float64)
    pos, true = p > 0.5, t > 0.5
    return {
        "mae": np.abs(p - t).mean(),
        "mse": ((p - t) ** 2).mean(),
        "accuracy": (pos == true).mean(),
        "precision": (pos & true).sum() / pos.sum(),
        "recall": (pos & true).sum() / true.sum(),
        "auc": auc(p, t, 50),
    }[name]


def check(m, logs, x, targets, asked):
    preds = m.predict(x, verbose=0)
    for (out, names), p, t in zip(asked.items(), preds, targets):
        for name in names:
            want = numpy_metric(name, p, t)
            assert logs[f"{out}_{name}"] == pytest.approx(want, rel=1e-5, abs=1e-6), f"{out}_{name}"


def test_one_list_is_every_outputs_and_named_per_output(rng):
    x, labels, values = data(rng, 150)
    xv, lv, vv = data(rng, 61)
    m = two_outputs()
    compile_(m, ["mae", "mse"])
    h = m.fit(x, [labels, values], epochs=3, batch_size=32, verbose=0, validation_data=(xv, [lv, vv]))
    for out in ("tags", "value"):
        for name in ("mae", "mse"):
            for key in (f"{out}_{name}", f"val_{out}_{name}"):
                assert len(h.history[key]) == 3 and all(np.isfinite(h.history[key])), key
    assert "mae" not in h.history and "tags_mean_absolute_error" not in h.history
    logs = m.evaluate(xv, [lv, vv], batch_size=40, verbose=0, return_dict=True)
    check(m, logs, xv, [lv, vv], {"tags": ["mae", "mse"], "value": ["mae", "mse"]})
    assert h.history["val_value_mse"][-1] == pytest.approx(logs["value_mse"], rel=1e-6)
    # Keras's list: the total, each output's loss, then the metrics output by output.
    keys = ["tags_loss", "value_loss", "tags_mae", "tags_mse", "value_mae", "value_mse"]
    assert m.evaluate(xv, [lv, vv], batch_size=40, verbose=0) == [logs["loss"]] + [logs[k] for k in keys]


def test_a_dict_and_a_list_of_lists_give_each_output_its_own(rng):
    x, labels, values = data(rng, 150)
    xv, lv, vv = data(rng, 61)
    runs = []
    for form in ("dict", "lists"):
        m = two_outputs()
        tags = ["accuracy", keras.metrics.AUC(num_thresholds=50), "precision", "recall"]
        compile_(m, {"value": "mae", "tags": tags} if form == "dict" else [tags, ["mae"]])
        h = m.fit(x, [labels, values], epochs=3, batch_size=32, verbose=0, shuffle=False, validation_data=(xv, [lv, vv]))
        runs.append((m, h.history))
    assert runs[0][1] == runs[1][1]
    m, hist = runs[0]
    want = {"tags_loss", "value_loss", "tags_accuracy", "tags_auc", "tags_precision", "tags_recall", "value_mae"}
    assert set(hist) == {"loss", "val_loss"} | want | {f"val_{k}" for k in want}
    logs = m.evaluate(xv, [lv, vv], batch_size=40, verbose=0, return_dict=True)
    check(m, logs, xv, [lv, vv], {"tags": ["accuracy", "auc", "precision", "recall"], "value": ["mae"]})
    assert logs["tags_auc"] > 0.7, logs


def test_metrics_an_output_cannot_give_are_refused_naming_it(rng):
    keras.utils.set_random_seed(3)
    x = keras.Input(shape=(5,), name="x")
    h = layers.Dense(8, activation="relu")(x)
    m = keras.Model(x, [layers.Dense(3, activation="softmax", name="cls")(h), layers.Dense(2, name="reg")(h)])
    losses = ["sparse_categorical_crossentropy", "mse"]
    with pytest.raises(ValueError, match=r"output 'cls'"):
        m.compile(optimizer="adam", loss=losses, metrics=["mae"])
    with pytest.raises(ValueError, match=r"output 'reg'"):
        m.compile(optimizer="adam", loss=losses, metrics=["accuracy"])
    with pytest.raises(ValueError, match="output names"):
        m.compile(optimizer="adam", loss=losses, metrics={"nope": ["mae"]})
    # Chosen per output, they run.
    m.compile(optimizer="adam", loss=losses, metrics={"cls": ["accuracy"], "reg": ["mae", "mse"]})
    xs, _, values = data(rng, 64)
    y = rng.integers(0, 3, 64)
    logs = m.fit(xs, [y, values], epochs=1, verbose=0).history
    assert {"cls_accuracy", "reg_mae", "reg_mse"} <= set(logs)
