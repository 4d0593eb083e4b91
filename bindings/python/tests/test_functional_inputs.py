"""keras.Model with several inputs: the arrays reach the inputs named (as a list in ``inputs``
order or a dict keyed by their names), two inputs concatenated train exactly as one input of
both arrays, integer arrays are uploaded as ids and train as their float values, files keep
every input, and a wrong number of arrays, wrong keys or unequal samples say so."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


def data(rng, n=160):
    y = rng.integers(0, 3, n)
    x = rng.standard_normal((n, 12)).astype(np.float32)
    x[np.arange(n), y * 4] += 2.0
    return x[:, :7].copy(), x[:, 7:].copy(), x, y


def two_input_model(swap=False):
    a = keras.Input(shape=(7,), name="a")
    b = keras.Input(shape=(5,), name="b")
    h = layers.Concatenate()([b, a] if swap else [a, b])
    h = layers.Dense(16, activation="relu")(h)
    out = layers.Dense(3, activation="softmax")(h)
    return keras.Model(inputs=[a, b], outputs=out)


def test_two_inputs_train_as_one_input_of_both_arrays(rng):
    xa, xb, x, y = data(rng)
    seq = keras.Sequential([keras.Input(shape=(12,)), layers.Dense(16, activation="relu"), layers.Dense(3, activation="softmax")])
    two = two_input_model()
    two.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    seq.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    two.set_weights(seq.get_weights())
    h1 = seq.fit(x, y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    h2 = two.fit([xa, xb], y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    assert h1.history["loss"] == h2.history["loss"]
    for w1, w2 in zip(seq.get_weights(), two.get_weights()):
        np.testing.assert_array_equal(w1, w2)
    # The same arrays as a dict keyed by the inputs' names, in any key order.
    p_list = two.predict([xa, xb], verbose=0)
    p_dict = two.predict({"b": xb, "a": xa}, verbose=0)
    np.testing.assert_array_equal(p_list, p_dict)
    np.testing.assert_array_equal(p_list, seq.predict(x, verbose=0))
    assert two.evaluate({"a": xa, "b": xb}, y, verbose=0) == seq.evaluate(x, y, verbose=0)
    # Validation data in the same forms.
    two.fit([xa, xb], y, epochs=1, batch_size=32, verbose=0, validation_data=({"a": xa, "b": xb}, y))
    hist = two.fit([xa, xb], y, epochs=1, batch_size=32, verbose=0, validation_split=0.25)
    assert "val_loss" in hist.history


def test_the_arrays_reach_the_inputs_they_are_named_for(rng):
    # A model that concatenates b first is a different function of the same arrays: given
    # the same weights, its predictions differ from the one above, and equal those of the
    # Sequential model on the columns in b, a order.
    xa, xb, x, y = data(rng)
    seq = keras.Sequential([keras.Input(shape=(12,)), layers.Dense(16, activation="relu"), layers.Dense(3, activation="softmax")])
    seq.build()
    swapped = two_input_model(swap=True)
    straight = two_input_model()
    swapped.set_weights(seq.get_weights())
    straight.set_weights(seq.get_weights())
    p = swapped.predict([xa, xb], verbose=0)
    np.testing.assert_array_equal(p, seq.predict(np.concatenate([xb, xa], axis=1), verbose=0))
    assert not np.array_equal(p, straight.predict([xa, xb], verbose=0))


def test_integer_arrays_are_ids_that_train_as_their_values(rng):
    xa, _, _, y = data(rng)
    ids = rng.integers(0, 300, (len(y), 2))

    def model():
        keras.utils.set_random_seed(4)
        a = keras.Input(shape=(7,), name="a")
        i = keras.Input(shape=(2,), name="ids")
        out = layers.Dense(3, activation="softmax")(layers.Concatenate()([a, i]))
        m = keras.Model([a, i], out)
        m.compile(optimizer=keras.optimizers.SGD(1e-6), loss="sparse_categorical_crossentropy")
        return m

    m1, m2 = model(), model()
    m1.fit([xa, ids], y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    m2.fit([xa, ids.astype(np.float32)], y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    for w1, w2 in zip(m1.get_weights(), m2.get_weights()):
        np.testing.assert_array_equal(w1, w2)
    with pytest.raises(ValueError, match="ids below"):
        m1.fit([xa, ids + (1 << 24)], y, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="ids below"):
        m1.fit([xa, -ids - 1], y, epochs=1, verbose=0)


def test_files_keep_every_input(rng, tmp_path):
    xa, xb, _, y = data(rng)
    m = two_input_model()
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    m.fit([xa, xb], y, epochs=1, verbose=0)
    path = str(tmp_path / "two.safetensors")
    m.save(path)
    loaded = keras.models.load_model(path)
    assert [i.name for i in loaded.inputs] == ["a", "b"]
    np.testing.assert_array_equal(loaded.predict({"a": xa, "b": xb}, verbose=0), m.predict([xa, xb], verbose=0))
    lines = []
    m.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "a (InputLayer)" in text and "b (InputLayer)" in text


def test_wrong_arrays_say_what_was_expected(rng):
    xa, xb, _, y = data(rng)
    m = two_input_model()
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"2 inputs \['a', 'b'\]"):
        m.fit(xa, y, verbose=0)
    with pytest.raises(ValueError, match="input names"):
        m.predict({"a": xa, "c": xb}, verbose=0)
    with pytest.raises(ValueError, match="same number of samples"):
        m.predict([xa, xb[:10]], verbose=0)
    with pytest.raises(ValueError, match="shape"):
        m.predict([xb, xa], verbose=0)
    with pytest.raises(ValueError, match="twice"):
        a = keras.Input(shape=(3,))
        keras.Model([a, a], layers.Dense(2)(a))
    # Still usable.
    m.fit([xa, xb], y, epochs=1, verbose=0)


def test_integer_first_inputs_train_as_their_values(rng):
    # Token ids as the (only) input, declared as Keras declares them.
    ids = rng.integers(0, 1000, (96, 4))
    y = rng.integers(0, 3, 96)

    def model():
        keras.utils.set_random_seed(2)
        i = keras.Input(shape=(4,), dtype="int32", name="ids")
        m = keras.Model(i, layers.Dense(3, activation="softmax")(i))
        m.compile(optimizer=keras.optimizers.SGD(1e-7), loss="sparse_categorical_crossentropy")
        return m

    m1, m2 = model(), model()
    m1.fit(ids, y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    m2.fit(ids.astype(np.float32), y, epochs=2, batch_size=32, verbose=0, shuffle=False)
    for w1, w2 in zip(m1.get_weights(), m2.get_weights()):
        np.testing.assert_array_equal(w1, w2)
    with pytest.raises(ValueError, match="dtype"):
        keras.Input(shape=(4,), dtype="complex64")
