"""Training control as Keras programs use it: learning-rate schedules applied per step,
LearningRateScheduler, ReduceLROnPlateau, CSVLogger, initial_epoch, BackupAndRestore."""

import csv
import math

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers
from suanli.keras.optimizers import schedules


def data(rng, n=64):
    x = rng.standard_normal((n, 5)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


def model(lr=0.1, seed=3):
    keras.utils.set_random_seed(seed)
    m = keras.Sequential([layers.Dense(6, activation="tanh", input_shape=(5,)), layers.Dense(2, activation="softmax")])
    m.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss="sparse_categorical_crossentropy")
    return m


def test_schedules_match_keras_formulas():
    e = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    assert e(0) == 0.1 and math.isclose(e(10), 0.05) and math.isclose(e(5), 0.1 * 0.5 ** 0.5)
    assert math.isclose(schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True)(19), 0.05)
    assert math.isclose(schedules.InverseTimeDecay(0.1, 10, 1.0)(10), 0.05)
    p = schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    assert [p(0), p(10), p(11), p(20), p(21)] == [1.0, 1.0, 0.5, 0.5, 0.1]
    c = schedules.CosineDecay(0.1, decay_steps=100, alpha=0.1)
    assert math.isclose(c(0), 0.1) and math.isclose(c(50), 0.1 * (0.9 * 0.5 + 0.1)) and math.isclose(c(200), 0.01)
    w = schedules.CosineDecay(0.0, decay_steps=10, warmup_target=0.2, warmup_steps=5)
    assert math.isclose(w(0), 0.0) and math.isclose(w(5), 0.2) and math.isclose(w(15), 0.0, abs_tol=1e-12)
    with pytest.raises(ValueError):
        schedules.PiecewiseConstantDecay([10], [1.0])


def test_a_schedule_sets_every_steps_rate(rng):
    x, y = data(rng)
    seen = []

    def rate(step):
        seen.append(step)
        return 0.1 if step < 4 else 0.02

    a = model(lr=rate)
    seen.clear()  # compile asked for the first rate
    a.fit(x, y, epochs=2, batch_size=16, shuffle=False, verbose=0)
    assert seen == list(range(8)), seen
    # The same rates given another way: 0.1 for one fit of 4 steps, then 0.02.
    b = model(lr=0.1)
    b.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    b.optimizer.learning_rate = 0.02
    b.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    np.testing.assert_array_equal(a.predict(x, verbose=0), b.predict(x, verbose=0))
    # A schedule object, and a schedule whose rate turns bad stops training with its error.
    c = model(lr=schedules.ExponentialDecay(0.1, 4, 0.5))
    c.fit(x, y, epochs=1, batch_size=16, verbose=0)

    def broken(step):
        if step == 2:
            raise ArithmeticError("no rate today")
        return 0.1

    d = model(lr=broken)
    with pytest.raises(ArithmeticError, match="no rate today"):
        d.fit(x, y, epochs=1, batch_size=16, verbose=0)


def test_lr_callbacks_and_csv_logger(rng, tmp_path):
    x, y = data(rng)
    m = model(lr=0.1)
    rates = []
    sched = keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)
    spy = keras.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: rates.append(m.optimizer.learning_rate))
    log = tmp_path / "log.csv"
    h = m.fit(x, y, epochs=3, batch_size=16, verbose=0, callbacks=[sched, spy, keras.callbacks.CSVLogger(str(log))])
    assert rates == [0.05, 0.025, 0.0125]
    assert h.history["learning_rate"] == rates
    rows = list(csv.reader(open(log)))
    assert rows[0] == ["epoch", "learning_rate", "loss"], rows
    assert [r[0] for r in rows[1:]] == ["0", "1", "2"]
    np.testing.assert_allclose([float(r[2]) for r in rows[1:]], h.history["loss"])
    # ReduceLROnPlateau on a metric that never improves after the first epoch: halves after
    # `patience` epochs, down to min_lr; the logs hold the rate each epoch trained with (as
    # Keras records it, before the reduction).
    m2 = model(lr=0.1)
    r = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=10.0, min_lr=0.03)
    h2 = m2.fit(x, y, epochs=4, batch_size=16, verbose=0, callbacks=[r])
    assert h2.history["learning_rate"] == [0.1, 0.1, 0.05, 0.03], h2.history["learning_rate"]
    assert m2.optimizer.learning_rate == 0.03
    with pytest.raises(ValueError, match="factor"):
        keras.callbacks.ReduceLROnPlateau(factor=1.5)


class Interrupt(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise KeyboardInterrupt


def test_initial_epoch_and_backup_and_restore_continue_runs_exactly(rng, tmp_path, capsys):
    x, y = data(rng)
    whole = model()
    whole.fit(x, y, epochs=4, batch_size=16, verbose=0)
    want = whole.predict(x, verbose=0)
    # initial_epoch: two fits, the second numbered from epoch 3.
    parts = model()
    parts.fit(x, y, epochs=2, batch_size=16, verbose=0)
    h = parts.fit(x, y, epochs=4, initial_epoch=2, batch_size=16, verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 3/4" in out and "Epoch 1/4" not in out
    assert h.epoch == [2, 3]
    np.testing.assert_array_equal(parts.predict(x, verbose=0), want)
    assert parts.fit(x, y, epochs=4, initial_epoch=4, verbose=0).epoch == []
    # BackupAndRestore: interrupted after epoch 2, then the same program again.
    backup = tmp_path / "backup"
    first = model()
    with pytest.raises(KeyboardInterrupt):
        first.fit(x, y, epochs=4, batch_size=16, verbose=0, callbacks=[keras.callbacks.BackupAndRestore(str(backup)), Interrupt()])
    assert (backup / "model.safetensors").exists()
    again = model()
    h = again.fit(x, y, epochs=4, batch_size=16, verbose=0, callbacks=[keras.callbacks.BackupAndRestore(str(backup))])
    assert h.epoch == [2, 3]
    np.testing.assert_array_equal(again.predict(x, verbose=0), want)
    assert not backup.exists(), "a finished run deletes its backup"


def test_tensorboard_event_files_read_by_tensorboard(rng, tmp_path):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    x, y = data(rng, 96)
    m = model(lr=schedules.ExponentialDecay(0.1, decay_steps=5, decay_rate=0.5))
    m.compile(optimizer=m.optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    tb = keras.callbacks.TensorBoard(log_dir=str(tmp_path / "logs"), update_freq="batch")
    h = m.fit(x, y, epochs=3, batch_size=16, validation_split=0.25, verbose=0, callbacks=[tb])

    def scalars(which):
        acc = ea.EventAccumulator(str(tmp_path / "logs" / which))
        acc.Reload()
        return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}

    train, val = scalars("train"), scalars("validation")
    assert [s for s, _ in train["epoch_loss"]] == [0, 1, 2]
    np.testing.assert_allclose([v for _, v in train["epoch_loss"]], h.history["loss"], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in train["epoch_accuracy"]], h.history["accuracy"], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in val["epoch_loss"]], h.history["val_loss"], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in val["epoch_accuracy"]], h.history["val_accuracy"], rtol=1e-6)
    # The schedule's rate at the end of each epoch of 5 steps: 0.1 · 0.5^(5(e+1)/5).
    np.testing.assert_allclose([v for _, v in train["epoch_learning_rate"]], [0.05, 0.025, 0.0125], rtol=1e-6)
    # Per-read scalars, when the engine read metrics mid-epoch (how often depends on speed).
    for step, v in train.get("batch_loss", []):
        assert 1 <= step <= 15 and np.isfinite(v)


def test_validation_freq(rng):
    x, y = data(rng, 80)
    full = model().fit(x, y, epochs=4, batch_size=16, validation_split=0.25, verbose=0)
    every2 = model().fit(x, y, epochs=4, batch_size=16, validation_split=0.25, validation_freq=2, verbose=0)
    listed = model().fit(x, y, epochs=4, batch_size=16, validation_split=0.25, validation_freq=[1, 4], verbose=0)
    assert every2.history["loss"] == full.history["loss"]
    assert every2.history["val_loss"] == full.history["val_loss"][1::2]
    assert listed.history["val_loss"] == [full.history["val_loss"][0], full.history["val_loss"][3]]
    # A frequency of 0 is a ValueError on the array path and on the dataset path alike.
    for xs, ys in ((x, y), (Batches(x, y, 16), None)):
        with pytest.raises(ValueError, match="validation_freq"):
            model().fit(xs, ys, epochs=2, validation_data=(x, y), validation_freq=0, verbose=0)


class Batches(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.bs = x, y, batch_size
        self.epochs_ended = 0
        self.fetched = 0

    def __len__(self):
        return -(-len(self.x) // self.bs)

    def __getitem__(self, i):
        self.fetched += 1
        s = slice(i * self.bs, (i + 1) * self.bs)
        return self.x[s], self.y[s]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_datasets_and_generators_materialised_and_streamed(rng, monkeypatch):
    x, y = data(rng, 100)
    # The arrays with the dataset's order and batch size: the reference run.
    ref = model()
    href = ref.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0)
    want = ref.predict(x, verbose=0)
    # Materialised (the whole epoch fits the limit): exactly the array run.
    mat = model()
    once = Batches(x, y, 16)
    h = mat.fit(once, epochs=3, verbose=0)
    assert once.fetched == 7, "materialised: each batch fetched once"
    assert h.history["loss"] == href.history["loss"]
    np.testing.assert_array_equal(mat.predict(x, verbose=0), want)
    # Streamed in chunks of whole batches (a limit of three batches of features): the same
    # steps in the same order, so the same weights; the epoch loss is the chunks' weighted mean.
    monkeypatch.setattr(keras.utils, "MATERIALISE_LIMIT_BYTES", 3 * 16 * x.shape[1] * 4)
    ds = Batches(x, y, 16)
    st = model()
    hs = st.fit(ds, epochs=3, verbose=0, validation_data=Batches(x[:40], y[:40], 8))
    np.testing.assert_array_equal(st.predict(x, verbose=0), want)
    np.testing.assert_allclose(hs.history["loss"], href.history["loss"], rtol=1e-6)
    assert ds.fetched == 3 * 7, "streamed: every batch fetched every epoch"
    assert ds.epochs_ended == 3 and len(hs.history["val_loss"]) == 3
    # evaluate and predict take datasets too, chunk by chunk.
    loss = st.evaluate(Batches(x, y, 16), verbose=0)
    np.testing.assert_allclose(loss, st.evaluate(x, y, verbose=0), rtol=1e-6)
    np.testing.assert_array_equal(st.predict(Batches(x, y, 16)), want)

    # A generator that goes on (data augmentation), with steps_per_epoch.
    def forever():
        while True:
            for i in range(0, 96, 16):
                yield x[i:i + 16], y[i:i + 16]

    g = model()
    hg = g.fit(forever(), steps_per_epoch=6, epochs=2, verbose=0)
    assert len(hg.history["loss"]) == 2
    with pytest.raises(ValueError, match="y must not be given"):
        g.fit(Batches(x, y, 16), y)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        g.fit(x, y, steps_per_epoch=3)


def test_prometheus_metrics_served_while_fit_runs(rng):
    import urllib.request

    x = rng.standard_normal((120, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    m = keras.Sequential([keras.layers.Dense(2, activation="softmax", input_shape=(4,))])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    served = keras.callbacks.PrometheusMetrics("127.0.0.1:0")
    scraped = []

    class Scrape(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            with urllib.request.urlopen(f"http://{served.address}/metrics") as r:
                scraped.append((r.headers["Content-Type"], r.read().decode()))

    h = m.fit(x, y, epochs=2, batch_size=20, verbose=0, callbacks=[served, Scrape()])
    assert served.address and served.address.startswith("127.0.0.1:")
    assert len(scraped) == 2
    ctype, text = scraped[-1]
    assert ctype.startswith("text/plain; version=0.0.4")
    vals = {l.split("{")[0]: float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith("suanli_train_")}
    assert vals["suanli_train_epochs_total"] == 2 and vals["suanli_train_steps_total"] == 12
    assert vals["suanli_train_loss"] == pytest.approx(h.history["loss"][-1], abs=1e-12)
    with pytest.raises(ValueError, match="at most one"):
        m.fit(x, y, verbose=0, callbacks=[keras.callbacks.PrometheusMetrics("127.0.0.1:0"), keras.callbacks.PrometheusMetrics("127.0.0.1:0")])
