"""TensorFlow's beginner quickstart, the most-run TensorFlow program, runs with one changed
import (examples/python/quickstart.py): Flatten of (28, 28) images, calling the model before
compile, tf.nn.softmax, a loss object called on data, from_logits=True training, evaluate's
verbose=2 line, and a Sequential holding the trained model and a Softmax layer."""

import re
import runpy
import subprocess
import sys

import numpy as np

from conftest import REPO

PROGRAM = REPO / "examples" / "python" / "quickstart.py"

RUNNER = """
import suanli
load = suanli.keras.datasets.mnist.load_data
def subset():
    (x, y), (xt, yt) = load()
    return (x[:{n}], y[:{n}]), (xt[:{nt}], yt[:{nt}])
suanli.keras.datasets.mnist.load_data = subset
import runpy
g = runpy.run_path({path!r}, run_name="__main__")
import numpy as np
np.save({out!r}, np.stack([g["probability_model"](g["x_test"][:5]).numpy(), g["model"].predict(g["x_test"][:5], verbose=0)]))
"""


def test_the_tensorflow_quickstart_runs_with_one_changed_import(tmp_path):
    # The program trains 5 epochs on 60,000 images; the test wraps load_data to give it the
    # first rows (a parameter of the test, not a change of the program).
    n, nt = 3000, 1000
    out_file = tmp_path / "probs.npy"
    runner = RUNNER.format(n=n, nt=nt, path=str(PROGRAM), out=str(out_file))
    out = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("TensorFlow version: "), lines[:2]
    assert [l for l in lines if l.startswith("Epoch ")] == [f"Epoch {e}/5" for e in range(1, 6)]
    # model.evaluate(x_test, y_test, verbose=2), as Keras prints it.
    ev = [l for l in lines if l.startswith(f"{-(-nt // 32)}/{-(-nt // 32)} - ")]
    assert len(ev) == 1, out.stdout
    m = re.match(r"^32/32 - \d+s - loss: (\d\.\d{4}) - accuracy: (\d\.\d{4}) - \d+m?s/epoch - \d+[mu]s/step$", ev[0])
    assert m, ev[0]
    # 3,000 images, 5 epochs: far above chance.
    assert float(m.group(2)) > 0.8, ev[0]
    # The untrained model's loss on one image is near ln(10), as the notebook explains.
    first_loss = float(next(l for l in lines if re.match(r"^\d+\.\d+$", l)))
    assert 0.5 < first_loss < 5.0, lines[:8]
    # probability_model = Sequential([model, Softmax()]): softmax of the trained model's
    # logits, with the weights shared (the outer model was never trained itself).
    probs, logits = np.load(out_file)
    assert probs.shape == (5, 10)
    e = np.exp(logits.astype(np.float64) - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(probs, e / e.sum(axis=1, keepdims=True), atol=1e-6)
    # The program's text: only the import differs from the notebook's cells.
    code = [l for l in PROGRAM.read_text().splitlines() if l.startswith(("import ", "from "))]
    assert code == ["import suanli as tf"], code
