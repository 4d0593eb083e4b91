"""keras.layers.Embedding from Python: int32 ids predict the table's rows (NumPy's
``table[ids]``, ids outside the table giving zeros), as the first layer of a Sequential or
called on ``keras.Input(dtype="int32")``; ``input_dim`` given by name is the vocabulary (not
an input shape); a model reading ids trains, saves and loads to the same predictions; ids past
the table and the arguments suanli does not implement raise ValueError naming them."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers

V, E, T = 50, 8, 6


def test_predict_reads_the_table_rows(rng):
    model = keras.Sequential([keras.Input(shape=(T,), dtype="int32"), layers.Embedding(V, E)])
    ids = rng.integers(0, V, (9, T)).astype(np.int32)
    out = model.predict(ids, verbose=0)
    (table,) = model.get_weights()
    assert table.shape == (V, E)
    # Keras's default initializer: uniform in ±0.05.
    assert np.abs(table).max() <= 0.05 and np.abs(table).max() > 0.0
    assert out.shape == (9, T, E)
    np.testing.assert_array_equal(out, table[ids])


def test_called_on_an_int_input_with_arguments_by_name(rng):
    x = keras.Input(shape=(2, 3), dtype="int32")
    emb = layers.Embedding(input_dim=V, output_dim=E, embeddings_initializer="normal")
    y = emb(x)
    assert y.shape == (None, 2, 3, E)
    model = keras.Model(x, y)
    ids = rng.integers(0, V, (4, 2, 3)).astype(np.int32)
    out = model.predict(ids, verbose=0)  # builds the model
    table = emb.get_weights()[0]
    np.testing.assert_array_equal(out, table[ids])
    # An id past the table (or below it) would read zeros: refused, naming where it is.
    for bad in (V, -2):
        wrong = ids.copy()
        wrong[2, 1, 0] = bad
        with pytest.raises(ValueError, match=f"{bad} at sample 2, position 3"):
            model.predict(wrong, verbose=0)
    config = emb.get_config()
    assert (config["input_dim"], config["output_dim"]) == (V, E)
    assert config["embeddings_initializer"] == "normal" and config["mask_zero"] is False


def classifier():
    return keras.Sequential([
        keras.Input(shape=(T,), dtype="int32"),
        layers.Embedding(V, E),
        layers.Flatten(),
        layers.Dense(3, activation="softmax"),
    ])


def test_a_model_of_ids_trains_saves_and_loads(rng, tmp_path):
    ids = rng.integers(0, V, (96, T)).astype(np.int32)
    y = ids[:, 0] % 3
    model = classifier()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    before = model.get_weights()[0].copy()
    hist = model.fit(ids, y, epochs=8, batch_size=16, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    assert not np.array_equal(model.get_weights()[0], before)
    path = tmp_path / "embedding.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(ids, verbose=0), model.predict(ids, verbose=0))
    # Ids past the table are named, not silently read as zeros.
    bad = ids.copy()
    bad[3, 2] = V
    with pytest.raises(ValueError, match=f"{V} at row 3, column 2"):
        model.fit(bad, y, epochs=1, verbose=0)


@pytest.mark.parametrize("arg", [
    {"mask_zero": True},
    {"sparse": True},
    {"embeddings_regularizer": "l2"},
    {"embeddings_constraint": "non_neg"},
    {"embeddings_initializer": "orthogonal"},
])
def test_what_suanli_does_not_implement_is_refused_by_name(arg):
    (name,) = arg
    with pytest.raises(ValueError, match=name):
        layers.Embedding(V, E, **arg)
