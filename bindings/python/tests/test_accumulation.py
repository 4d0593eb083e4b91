"""``gradient_accumulation_steps``: four batches of 8 train as one batch of 32 (Keras's
averaging), and with clipping ``fit`` says it is not supported yet."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


def model(**opt):
    keras.utils.set_random_seed(5)
    m = keras.Sequential([keras.Input(shape=(6,)), layers.Dense(8, activation="tanh"), layers.Dense(3, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01, **opt), loss="sparse_categorical_crossentropy")
    return m


def test_four_batches_of_eight_train_as_one_of_thirty_two(rng):
    x = rng.standard_normal((128, 6)).astype(np.float32)
    y = rng.integers(0, 3, 128)
    big, acc, small = model(), model(gradient_accumulation_steps=4), model()
    big.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    acc.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    small.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(acc.get_weights(), big.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert max(np.abs(a - b).max() for a, b in zip(small.get_weights(), big.get_weights())) > 1e-3


def test_bad_values_and_clipping_say_so(rng):
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        keras.optimizers.Adam(gradient_accumulation_steps=0)
    m = model(gradient_accumulation_steps=2, clipnorm=1.0)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    with pytest.raises(ValueError, match="clipping"):
        m.fit(x, rng.integers(0, 3, 16), batch_size=8, verbose=0)
