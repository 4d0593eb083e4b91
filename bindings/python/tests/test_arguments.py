"""fit, evaluate and predict check every argument alike, before anything runs: a wrong kind
of value is a TypeError, a value out of range a ValueError, each naming the argument and
what it must be (no bare ZeroDivisionError, OverflowError or silent truncation)."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers


@pytest.fixture
def model():
    m = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


X = np.zeros((8, 4), np.float32)
Y = np.zeros(8, np.int64)

BAD = [
    # (argument, value, exception, words the message has)
    ("batch_size", 0, ValueError, "batch_size must be at least 1; found 0"),
    ("batch_size", -4, ValueError, "batch_size must be at least 1; found -4"),
    ("batch_size", "32", TypeError, "batch_size must be an integer; found '32'"),
    ("batch_size", 2.5, TypeError, "batch_size must be an integer"),
    ("batch_size", True, TypeError, "batch_size must be an integer"),
]


@pytest.mark.parametrize("name,value,exc,says", BAD)
@pytest.mark.parametrize("entry", ["fit", "evaluate", "predict"])
def test_batch_size_is_checked_alike_everywhere(model, entry, name, value, exc, says):
    call = {
        "fit": lambda **k: model.fit(X, Y, verbose=0, **k),
        "evaluate": lambda **k: model.evaluate(X, Y, verbose=0, **k),
        "predict": lambda **k: model.predict(X, verbose=0, **k),
    }[entry]
    with pytest.raises(exc, match=says):
        call(**{name: value})
    assert model.predict(X, verbose=0).shape == (8, 3), "the model is still usable"


@pytest.mark.parametrize(
    "kwargs,exc,says",
    [
        ({"epochs": "2"}, TypeError, "epochs must be an integer; found '2'"),
        ({"epochs": 2.7}, TypeError, "epochs must be an integer; found 2.7"),
        ({"epochs": -1}, ValueError, "epochs must be at least 0"),
        ({"initial_epoch": -1}, ValueError, "initial_epoch must be at least 0"),
        ({"initial_epoch": 1.0}, TypeError, "initial_epoch must be an integer"),
        ({"validation_split": 1.0}, ValueError, r"validation_split must be in \[0, 1\)"),
        ({"validation_split": "0.1"}, TypeError, "validation_split must be a number"),
        ({"shuffle": "yes"}, TypeError, "shuffle must be True or False"),
        ({"steps_per_epoch": 0}, ValueError, "steps_per_epoch must be at least 1"),
        ({"verbose": 3}, ValueError, "verbose"),
    ],
)
def test_every_fit_argument_is_checked(model, kwargs, exc, says):
    w = model.get_weights()
    with pytest.raises(exc, match=says):
        model.fit(X, Y, **{"verbose": 0, **kwargs})
    for a, b in zip(w, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_numpy_integers_are_integers(model):
    h = model.fit(X, Y, epochs=np.int64(2), batch_size=np.int32(4), verbose=0)
    assert len(h.history["loss"]) == 2
    assert model.predict(X, batch_size=np.int64(3), verbose=0).shape == (8, 3)


def test_evaluate_and_predict_check_the_rest(model):
    with pytest.raises(TypeError, match="return_dict must be True or False"):
        model.evaluate(X, Y, return_dict="yes", verbose=0)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        model.predict(X, steps=0, verbose=0)
    with pytest.raises(ValueError, match="verbose"):
        model.predict(X, verbose=7)
    with pytest.raises(ValueError, match="verbose"):
        model.evaluate(X, Y, verbose="loud")
