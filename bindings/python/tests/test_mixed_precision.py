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
    with pytest.raises(NotImplementedError, match="per-layer policies"):
        layers.Dense(3, dtype="float32")
    layers.Activation("softmax", dtype="float32")
    layers.Dense(3, dtype="mixed_float16")
    # Gradient accumulation with loss scaling: refused when fit starts.
    x, y = data(rng, 16)
    m = keras.Sequential([keras.Input(shape=(10,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(gradient_accumulation_steps=2), loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="loss scaling"):
        m.fit(x, y, epochs=1, batch_size=4, verbose=0)
