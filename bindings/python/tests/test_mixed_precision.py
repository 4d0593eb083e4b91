"""Keras's mixed precision API: the global policy (models created after it is set take it),
Policy's dtypes, LossScaleOptimizer (wrapped by compile under mixed_float16, its scale read
from the device), TensorFlow's guide pattern (a float32 softmax last), an overflowing batch
skipped, and what is refused."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers, mixed_precision


@pytest.fixture(autouse=True)
def float32_after():
    yield
    mixed_precision.set_global_policy("float32")


def data(rng, n=64):
    x = rng.standard_normal((n, 10)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    return x, y


def test_policy_names_and_dtypes():
    p = mixed_precision.Policy("mixed_float16")
    assert (p.name, p.compute_dtype, p.variable_dtype) == ("mixed_float16", "float16", "float32")
    f = mixed_precision.Policy("float32")
    assert (f.compute_dtype, f.variable_dtype) == ("float32", "float32")
    assert mixed_precision.global_policy().name == "float32"
    mixed_precision.set_global_policy(p)
    assert mixed_precision.global_policy() == p
    mixed_precision.set_global_policy("float32")
    with pytest.raises(ValueError, match="mixed_bfloat16"):
        mixed_precision.set_global_policy("mixed_bfloat16")
    with pytest.raises(ValueError, match="expected one of"):
        mixed_precision.Policy("float64")


def test_tf_guide_pattern_trains_with_dynamic_loss_scaling(rng):
    x, y = data(rng)
    before = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3)])
    mixed_precision.set_global_policy("mixed_float16")
    # TensorFlow's mixed-precision guide: the last softmax in float32.
    m = keras.Sequential([
        keras.Input(shape=(10,)),
        layers.Dense(32, activation="relu"),
        layers.Dense(3),
        layers.Activation("softmax", dtype="float32"),
    ])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    assert isinstance(m.optimizer, mixed_precision.LossScaleOptimizer)
    assert m.optimizer.dynamic_scale == 2.0**15
    h = m.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert m.optimizer.dynamic_scale == 2.0**15  # 8 clean steps of 2000
    assert h.history["loss_scale"] == [2.0**15, 2.0**15]
    assert m.optimizer.skipped_steps == 0
    assert m.dtype_policy.name == "mixed_float16"
    # A model created before the policy was set keeps float32.
    assert before.dtype_policy.name == "float32"


def test_loss_scale_optimizer_grows_and_skips(rng):
    x, y = data(rng, 48)
    opt = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.01), initial_scale=4.0, dynamic_growth_steps=2)
    m = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    m.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    # 6 clean steps, doubling every 2.
    assert opt.dynamic_scale == 32.0
    assert opt.loss_scale == 32.0
    assert opt.learning_rate == 0.01
    # A batch whose loss is finite but whose scaled gradient overflows: skipped, unchanged.
    reg = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(1)])
    ro = mixed_precision.LossScaleOptimizer("adam")
    reg.compile(optimizer=ro, loss="mse")
    w0 = [w.copy() for w in reg.get_weights()]
    reg.fit(np.full((4, 10), 1e18, np.float32), np.zeros((4, 1), np.float32), epochs=1, batch_size=4, verbose=0)
    for a, b in zip(w0, reg.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert ro.dynamic_scale == 2.0**14
    assert ro.skipped_steps == 1


def test_refused(rng):
    with pytest.raises(ValueError, match="initial_scale"):
        mixed_precision.LossScaleOptimizer("adam", initial_scale=0)
    with pytest.raises(ValueError, match="dynamic_growth_steps"):
        mixed_precision.LossScaleOptimizer("adam", dynamic_growth_steps=0)
    with pytest.raises(ValueError, match="mixed_bfloat16"):
        layers.Dense(3, dtype="mixed_bfloat16")
    mixed_precision.set_global_policy("mixed_float16")
    # Checked when the layer joins a model (against the model's policy).
    with pytest.raises(NotImplementedError, match="per-layer policies"):
        keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, dtype="float32")])
    keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, dtype="mixed_float16"), layers.Activation("softmax", dtype="float32")])
    # Gradient accumulation with loss scaling: refused when fit starts.
    x, y = data(rng, 16)
    m = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(gradient_accumulation_steps=2), loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="loss scaling"):
        m.fit(x, y, epochs=1, batch_size=4, verbose=0)


def test_a_saved_mixed_model_loads_mixed_with_its_scale(rng, tmp_path):
    # A compiled model saves a checkpoint: the policy, the LossScaleOptimizer and the scale
    # come back (Keras 3 keeps mixed on load).
    x, y = data(rng, 48)
    mixed_precision.set_global_policy("mixed_float16")
    m = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    opt = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.01), initial_scale=4.0, dynamic_growth_steps=2)
    m.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    m.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    path = str(tmp_path / "mixed.safetensors")
    m.save(path)
    mixed_precision.set_global_policy("float32")
    back = keras.models.load_model(path)
    assert back.dtype_policy.name == "mixed_float16"
    assert isinstance(back.optimizer, mixed_precision.LossScaleOptimizer)
    assert isinstance(back.optimizer.inner_optimizer, keras.optimizers.SGD)
    assert (back.optimizer.initial_scale, back.optimizer.dynamic_growth_steps, back.optimizer.dynamic) == (4.0, 2, True)
    assert back.optimizer.dynamic_scale == 32.0
    np.testing.assert_array_equal(back.predict(x, verbose=0), m.predict(x, verbose=0))
    # Training goes on from the saved scale: 2 more steps of 8 rows double it once.
    back.fit(x[:16], y[:16], epochs=1, batch_size=8, shuffle=False, verbose=0)
    assert back.optimizer.dynamic_scale == 64.0
    # An uncompiled model saves plain weights: float32 on load.
    plain = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3)])
    plain.save(str(tmp_path / "plain.safetensors"))
    mixed_precision.set_global_policy("mixed_float16")
    assert keras.models.load_model(str(tmp_path / "plain.safetensors")).dtype_policy.name == "float32"
    # A float32 compiled model: no LossScaleOptimizer.
    mixed_precision.set_global_policy("float32")
    f = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    f.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    f.fit(x, y, epochs=1, batch_size=16, verbose=0)
    f.save(str(tmp_path / "f32.safetensors"))
    fb = keras.models.load_model(str(tmp_path / "f32.safetensors"))
    assert fb.dtype_policy.name == "float32"
    assert not isinstance(fb.optimizer, mixed_precision.LossScaleOptimizer)


def test_auto_scale_loss_false_turns_scaling_off(rng):
    x, y = data(rng, 16)
    mixed_precision.set_global_policy("mixed_float16")
    m = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(gradient_accumulation_steps=2), loss="sparse_categorical_crossentropy", auto_scale_loss=False)
    assert not isinstance(m.optimizer, mixed_precision.LossScaleOptimizer)
    w0 = [w.copy() for w in m.get_weights()]
    h = m.fit(x, y, epochs=2, batch_size=4, verbose=0)
    assert "loss_scale" not in h.history
    assert m._native.loss_scale_state() is None
    assert any(not np.array_equal(a, b) for a, b in zip(w0, m.get_weights()))
    # An explicit LossScaleOptimizer still scales.
    e = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    e.compile(optimizer=mixed_precision.LossScaleOptimizer("sgd"), loss="sparse_categorical_crossentropy", auto_scale_loss=False)
    e.fit(x, y, epochs=1, batch_size=4, verbose=0)
    assert e.optimizer.dynamic_scale == 2.0**15
    with pytest.raises(TypeError, match="auto_scale_loss"):
        e.compile(optimizer="sgd", loss="mse", auto_scale_loss="no")


def test_the_scale_is_readable_from_a_callback_during_fit(rng):
    x, y = data(rng, 48)
    opt = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.01), initial_scale=4.0, dynamic_growth_steps=2)
    seen = []

    class Watch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(("begin", opt.dynamic_scale))

        def on_epoch_end(self, epoch, logs=None):
            seen.append(("end", opt.dynamic_scale, logs["loss_scale"]))
            with pytest.raises(RuntimeError, match="skipped_steps"):
                opt.skipped_steps

    m = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    m.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0, callbacks=[Watch()])
    # 6 steps an epoch, doubling every 2: 4 -> 32 -> 256.
    assert seen == [("begin", 4.0), ("end", 32.0, 32.0), ("begin", 32.0), ("end", 256.0, 256.0)]
    assert opt.dynamic_scale == 256.0 and opt.skipped_steps == 0


def test_a_layers_dtype_is_checked_against_its_models_policy():
    # The model took float32 when it was created; the layer is made under the mixed policy.
    m = keras.Sequential([keras.Input(shape=(10,))])
    mixed_precision.set_global_policy("mixed_float16")
    m.add(layers.Dense(3, dtype="float32"))
    # A float32 Dense in a mixed model is refused when it joins it.
    d = layers.Dense(3, dtype="float32")
    mixed = keras.Sequential([keras.Input(shape=(10,))])
    with pytest.raises(NotImplementedError, match="per-layer policies"):
        mixed.add(d)
    mixed_precision.set_global_policy("float32")
    inp = keras.Input(shape=(10,))
    with pytest.raises(NotImplementedError, match="per-layer policies"):
        keras.Model(inp, layers.Dense(3, dtype="mixed_float16")(inp))


def test_loss_scale_optimizer_aliases():
    assert keras.optimizers.LossScaleOptimizer is mixed_precision.LossScaleOptimizer
    opt = keras.optimizers.get({"class_name": "LossScaleOptimizer", "config": {"inner_optimizer": {"class_name": "SGD", "config": {"learning_rate": 0.5}}, "initial_scale": 8.0}})
    assert isinstance(opt, mixed_precision.LossScaleOptimizer)
    assert (opt.learning_rate, opt.initial_scale, opt.dynamic_growth_steps) == (0.5, 8.0, 2000)
    again = keras.optimizers.get({"class_name": "LossScaleOptimizer", "config": opt.get_config()})
    assert again.get_config() == opt.get_config()
