"""Python `fit` against the Rust `mnist_mlp` example, side by side: the same model (784-128-
64-10, Adam, full MNIST), the same batch size, alternating which goes first in each round,
each in a fresh process. Prints the median epoch (epochs 2..N: the first compiles kernels)
of every run, the medians over rounds and the ratio Python / Rust.

    cargo build --release --example mnist_mlp        # the Rust side (default features)
    python bindings/python/bench/fit_vs_rust.py [--rounds 3] [--epochs 4] [--batch-sizes 32,128]
"""

import argparse
import pathlib
import re
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]

PY_RUN = r"""
import sys, time, suanli as tf
epochs, batch = int(sys.argv[1]), int(sys.argv[2])
(x, y), (xt, yt) = tf.keras.datasets.mnist.load_data()
x = x.reshape(-1, 784) / 255.0
xt = xt.reshape(-1, 784) / 255.0
model = tf.keras.Sequential([
    tf.keras.layers.Dense(128, activation='relu', input_shape=(784,)),
    tf.keras.layers.Dense(64, activation='relu'),
    tf.keras.layers.Dense(10, activation='softmax'),
])
model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
class Clock(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.t = time.perf_counter()
    def on_epoch_end(self, epoch, logs=None):
        print(f"epoch {epoch + 1} {time.perf_counter() - self.t:.4f}", flush=True)
# Validation on the test set every epoch, as the Rust example does (outside the epoch time).
h = model.fit(x, y, epochs=epochs, batch_size=batch, verbose=0, callbacks=[Clock()], validation_data=(xt, yt))
print("engine", " ".join(f"{s:.4f}" for s in h.epoch_seconds), flush=True)
"""


def python_epochs(epochs, batch):
    """Per-epoch seconds as Python sees them (between its epoch callbacks), and as the engine
    counts them (training only, the definition Rust's numbers use)."""
    out = subprocess.run([sys.executable, "-c", PY_RUN, str(epochs), str(batch)], capture_output=True, text=True, check=True)
    wall = [float(l.split()[2]) for l in out.stdout.splitlines() if l.startswith("epoch ")]
    engine = [float(v) for l in out.stdout.splitlines() if l.startswith("engine ") for v in l.split()[1:]]
    return wall, engine


def rust_epochs(epochs, batch):
    """The example's own median of epochs 2..N, from its bench table's time per step (printed
    to 0.1 µs; its epoch lines round to 0.1 s)."""
    exe = REPO / "target" / "release" / "examples" / "mnist_mlp"
    out = subprocess.run([str(exe), "--epochs", str(epochs), "--batch-size", str(batch), "--bench", "--no-torch"], capture_output=True, text=True, check=True, cwd=REPO)
    per_step = re.search(r"per step\s+([0-9.]+)µs", out.stdout)
    secs = [float(m.group(1)) for m in re.finditer(r"^Epoch \d+/\d+ \d+/\d+ - ([0-9.]+)s", out.stdout, re.M)]
    if per_step is None:
        raise RuntimeError(f"no bench table in mnist_mlp's output:\n{out.stdout}")
    steps = -(-60000 // batch)
    return secs, float(per_step.group(1)) * 1e-6 * steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=4, help="an even number gives an odd count of epochs 2..N, where the Rust example's median and Python's are the same statistic")
    ap.add_argument("--batch-sizes", default="32,128")
    a = ap.parse_args()
    for batch in [int(b) for b in a.batch_sizes.split(",")]:
        runs = {"rust": [], "python": [], "engine": []}
        for r in range(a.rounds):
            order = ["rust", "python"] if r % 2 == 0 else ["python", "rust"]
            for who in order:
                if who == "rust":
                    e, med = rust_epochs(a.epochs, batch)
                else:
                    e, engine = python_epochs(a.epochs, batch)
                    med = statistics.median(e[1:] or e)
                    runs["engine"].append(statistics.median(engine[1:] or engine))
                runs[who].append(med)
                extra = f"; engine clock {runs['engine'][-1]:.2f} s" if who == "python" else ""
                print(f"batch {batch} round {r + 1} {who:>6}: epochs {' '.join(f'{s:.2f}' for s in e)} s; median of 2..{a.epochs}: {med:.2f} s{extra}", flush=True)
        rs, ps, es = (statistics.median(runs[k]) for k in ("rust", "python", "engine"))
        ratios = [p / q for p, q in zip(runs["python"], runs["rust"])]
        eratios = [p / q for p, q in zip(runs["engine"], runs["rust"])]
        print(f"batch {batch}: Rust median epoch {rs:.2f} s; Python {ps:.2f} s between its callbacks, "
              f"{es:.2f} s by the engine's clock; Python/Rust {ps / rs:.3f} (per round "
              f"{' '.join(f'{x:.3f}' for x in ratios)}), engine clock {es / rs:.3f} (per round "
              f"{' '.join(f'{x:.3f}' for x in eratios)})", flush=True)


if __name__ == "__main__":
    main()
