"""Convolutional networks from Python: keras.io's convnet program runs with only its imports
changed, layers come from the one vocabulary (arguments checked there, Keras's defaults),
images of any rank go in, and files round-trip with their layers."""

import json
import runpy
import subprocess
import sys

import numpy as np
import pytest

import suanli
from suanli import keras
from suanli.keras import layers

from conftest import REPO

PROGRAM = REPO / "examples" / "python" / "mnist_cnn.py"


def test_the_keras_io_convnet_runs_with_only_its_imports_changed():
    # The program as published trains 15 epochs on 60,000 images; the test wraps load_data
    # to give it the first N (a parameter of the test, not a change of the program).
    n = 600
    runner = (
        "import suanli\n"
        "load = suanli.keras.datasets.mnist.load_data\n"
        f"def subset():\n    (x, y), (xt, yt) = load()\n    return (x[:{n}], y[:{n}]), (xt[:500], yt[:500])\n"
        "suanli.keras.datasets.mnist.load_data = subset\n"
        f"import runpy; runpy.run_path({str(PROGRAM)!r}, run_name='__main__')\n"
    )
    out = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"x_train shape: ({n}, 28, 28, 1)", lines[:3]
    assert any("conv2d (Conv2D)" in l and "(None, 26, 26, 32)" in l for l in lines), out.stdout
    assert any("Total params: 34826" in l for l in lines), out.stdout
    epochs = [l for l in lines if l.startswith("Epoch ")]
    assert epochs == [f"Epoch {e}/15" for e in range(1, 16)]
    assert any("val_accuracy: " in l for l in lines)
    acc = float([l for l in lines if l.startswith("Test accuracy:")][0].split()[-1])
    # 540 training images, 15 epochs: well above chance (0.1).
    assert acc > 0.6, out.stdout
    # The program's text: only its imports differ from keras.io's.
    text = PROGRAM.read_text()
    assert "from suanli import keras\nfrom suanli.keras import layers\n" in text
    code = [l for l in text.splitlines() if l.startswith(("import ", "from "))]
    assert code == ["import numpy as np", "from suanli import keras", "from suanli.keras import layers"], code


def test_layers_come_from_the_one_vocabulary():
    names = {n for n, _ in suanli._native.layer_classes()}
    assert {"Dense", "Conv2D", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "BatchNormalization", "Flatten", "Reshape", "Dropout"} <= names
    for n in names:
        assert isinstance(getattr(layers, n), type), n
    c = layers.Conv2D(8, 3)
    # Keras's defaults, as the engine fills them in.
    assert c.strides == (1, 1) and c.padding == "valid" and c.use_bias and c.activation == "linear"
    assert c.kernel_size == (3, 3)
    assert layers.MaxPooling2D().pool_size == (2, 2)
    assert layers.BatchNormalization().momentum == pytest.approx(0.99)
    # Checked when made, in the engine's words.
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(8, (0, 3))
    with pytest.raises(ValueError, match="fliters"):
        layers.Conv2D(8, 3, fliters=2)
    with pytest.raises(ValueError, match="padding"):
        layers.MaxPooling2D(padding="full")
    with pytest.raises(TypeError, match="multiple values"):
        layers.Conv2D(8, 3, filters=4)


def test_images_of_any_rank_and_typed_shape_errors():
    m = keras.Sequential([keras.Input(shape=(8, 8, 1)), layers.Conv2D(4, 3, activation="relu"), layers.GlobalAveragePooling2D(), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(0)
    x = rng.random((40, 8, 8), dtype=np.float32)  # (N, H, W): the model says C = 1
    y = rng.integers(0, 3, 40)
    m.fit(x, y, epochs=1, verbose=0)
    p = m.predict(x[..., None])
    assert p.shape == (40, 3) and np.allclose(p.sum(axis=1), 1, atol=1e-5)
    assert np.array_equal(p, m.predict(x))
    assert m.input_shape == (None, 8, 8, 1) and m.output_shape == (None, 3)
    with pytest.raises(ValueError, match=r"\(8, 8, 1\).*\(64,\)"):
        m.fit(x.reshape(40, 64), y, verbose=0)
    with pytest.raises(ValueError, match=r"\(4, 4, 1\)"):
        keras.Sequential([keras.Input(shape=(4, 4, 1)), layers.Conv2D(2, 5)]).build()


def test_a_cnn_file_keeps_its_layers_and_predictions(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.random((64, 8, 8, 2), dtype=np.float32)
    y = rng.integers(0, 4, 64)
    m = keras.Sequential([
        layers.Conv2D(4, 3, padding="same", activation="relu", input_shape=(8, 8, 2)),
        layers.BatchNormalization(),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(4, activation="softmax"),
    ])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    m.fit(x, y, epochs=2, batch_size=16, verbose=0)
    path = tmp_path / "cnn.safetensors"
    m.save(path)
    r = keras.models.load_model(path)
    assert [type(l).__name__ for l in r.layers] == ["Conv2D", "BatchNormalization", "MaxPooling2D", "Flatten", "Dense"]
    assert [l.name for l in r.layers] == ["conv2d", "batch_normalization", "max_pooling2d", "flatten", "dense"]
    assert r.layers[0].padding == "same" and r.layers[1].momentum == pytest.approx(0.99)
    assert np.array_equal(m.predict(x), r.predict(x))
    # Keras's weight count, moving statistics included.
    assert r.count_params() == m.count_params() == (3 * 3 * 2 * 4 + 4) + 4 * 4 + (4 * 4 * 4 * 4 + 4)
