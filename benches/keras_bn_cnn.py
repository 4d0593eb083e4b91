#!/usr/bin/env python3
"""Issue 35's BatchNorm CNN as a new user writes it, the same program for suanli and for
TensorFlow (`--peer tf`): Conv2D 32 3x3 `same` without bias, BatchNormalization, ReLU,
MaxPooling2D, Conv2D 64 3x3 stride 2 `same`, BatchNormalization, GlobalAveragePooling2D,
Dropout, Dense logits; Adam, batch 64, Fashion-MNIST.

A full suanli epoch on lavapipe takes minutes, so `--train-rows N` subsamples: the printed
`median_epoch_s` is the median training seconds (validation excluded) of epochs 2..E,
extrapolated to the full 60,000 rows (`--full-rows`) from the per-step time, and says so.
`--profile N` (suanli only) prints the profiler's top N kernels over the last epoch.

    python3 benches/keras_bn_cnn.py --train-rows 3200 --epochs 3              # suanli
    /tmp/peers/bin/python benches/keras_bn_cnn.py --peer tf --train-rows 3200 --epochs 3
"""
import argparse
import gzip
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402


def idx(path):
    with gzip.open(path) as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(b[4 + 4 * nd:], dtype=np.uint8).reshape(dims)


def build(keras, layers):
    return keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, 3, padding="same", use_bias=False),
        layers.BatchNormalization(),
        layers.ReLU(),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, strides=2, padding="same"),
        layers.BatchNormalization(),
        layers.GlobalAveragePooling2D(),
        layers.Dropout(0.3),
        layers.Dense(10),
    ])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", choices=["suanli", "tf"], default="suanli")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-rows", type=int, default=0)
    ap.add_argument("--full-rows", type=int, default=60000)
    ap.add_argument("--profile", type=int, default=0, help="suanli: print the top N kernels of the last epoch")
    a = ap.parse_args()
    if a.peer == "tf":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    else:
        import suanli as tf
    keras = tf.keras
    layers = keras.layers
    keras.utils.set_random_seed(a.seed)
    d = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    x = idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype("float32")[..., None] / 255
    y = idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype("int64")
    xt = idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype("float32")[..., None] / 255
    yt = idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype("int64")
    if a.train_rows:
        x, y = x[: a.train_rows], y[: a.train_rows]
    model = build(keras, layers)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, metrics=["accuracy"])
    times, steps = [], []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = self.end = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.end = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            # suanli may call on_train_batch_end once per replayed chunk of steps, so the
            # steps are counted from the rows.
            times.append(self.end - self.t)
            steps.append(-(-len(x) // a.batch_size))
            print(f"epoch {epoch + 1}: {times[-1]:.2f}s {steps[-1]} steps loss {logs['loss']:.4f}", flush=True)

    if a.profile and a.peer == "suanli" and a.epochs > 1:
        model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs - 1, verbose=0, callbacks=[Timer()])
        with tf.profiler.profile() as prof:
            model.fit(x, y, batch_size=a.batch_size, epochs=1, verbose=0, callbacks=[Timer()])
        print(prof.table(a.profile))
    else:
        model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs, verbose=0, callbacks=[Timer()])
    acc = model.evaluate(xt, yt, batch_size=256, verbose=0)[1]
    kept = list(range(1, len(times))) or [0]
    per_step = statistics.median(times[i] / max(steps[i], 1) for i in kept)
    full_steps = -(-a.full_rows // a.batch_size)
    print(f"step_ms {per_step * 1e3:.2f} (median of epochs 2..{len(times)}; epoch of {a.full_rows} rows extrapolated: {full_steps} steps)")
    print(f"median_epoch_s {per_step * full_steps:.4f} test_accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
