"""Weights saved from Python load in Rust, and the other way round (the Rust side is the
mnist_mlp example, run with cargo from the repository)."""

import re
import shutil
import subprocess

import numpy as np
import pytest

from suanli import keras

from conftest import REPO, scaled


def rust_mnist(*args):
    if shutil.which("cargo") is None or not (REPO / "examples" / "mnist_mlp.rs").exists():
        pytest.skip("needs cargo and the suanli repository (the Rust side of the round trip)")
    out = subprocess.run(
        ["cargo", "run", "--quiet", "--release", "--example", "mnist_mlp", "--", "--quiet", "--no-torch", *args],
        cwd=REPO, capture_output=True, text=True, timeout=1200,
    )
    assert out.returncode == 0, out.stderr
    m = re.search(r"Test accuracy: ([0-9.]+) \(loss ([0-9.]+)\)", out.stdout)
    assert m, out.stdout
    return m.group(1), m.group(2)


def test_python_weights_in_rust_and_rust_weights_in_python(mnist, tmp_path):
    (x, y), (xt, yt) = mnist
    # Python trains and saves; Rust evaluates the file on the test set (batches of 1000,
    # pixels as u8 / 255). Python evaluates the same inputs in the same batches: the same
    # numbers to the digits Rust prints.
    m = keras.Sequential([
        keras.layers.Dense(128, activation="relu", input_shape=(784,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    m.fit(x[:3000].reshape(-1, 784) / 255.0, y[:3000], epochs=1, verbose=0)
    py_file = tmp_path / "from_python.safetensors"
    m.save(py_file)
    acc, loss = rust_mnist("--load", str(py_file), "--epochs", "0")
    ploss, pacc = m.evaluate(scaled(xt), yt, batch_size=1000, verbose=0)
    assert (acc, loss) == (f"{pacc:.4f}", f"{ploss:.4f}")

    # Rust trains and saves; Python loads and evaluates.
    rs_file = tmp_path / "from_rust.safetensors"
    acc, loss = rust_mnist("--epochs", "1", "--train-rows", "2000", "--save", str(rs_file))
    r = keras.models.load_model(rs_file)
    r.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    ploss, pacc = r.evaluate(scaled(xt), yt, batch_size=1000, verbose=0)
    assert (acc, loss) == (f"{pacc:.4f}", f"{ploss:.4f}")
    assert float(acc) > 0.8
