#!/usr/bin/env python3
"""keras.io's "Simple MNIST convnet" as published, in TensorFlow/Keras on the CPU, for
`mnist_cnn --bench` to compare against: the same model, Adam, batch 128, validation_split
0.1. Prints one line per epoch and finally `median_epoch_s SECONDS test_accuracy ACC`.

    python3 benches/keras_mnist_cnn.py --epochs 3 --batch-size 128 --threads 2
"""
import argparse, gzip, os, statistics, time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402


def idx(path):
    with gzip.open(path) as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(b[4 + 4 * nd:], dtype=np.uint8).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-rows", type=int, default=0)
    a = ap.parse_args()
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.keras import layers

    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    keras.utils.set_random_seed(a.seed)
    d = os.environ.get("MNIST_DIR", os.path.join(os.path.dirname(__file__), "..", "data", "mnist"))
    x = idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype("float32")[..., None] / 255
    y = idx(os.path.join(d, "train-labels-idx1-ubyte.gz"))
    if a.train_rows:
        x, y = x[: a.train_rows], y[: a.train_rows]
    xt = idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype("float32")[..., None] / 255
    yt = idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz"))
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    times = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.end = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            # Training only (validation excluded), as suanli's epoch seconds.
            times.append(self.end - self.t)
            print(f"epoch {epoch + 1}: {times[-1]:.2f}s loss {logs['loss']:.4f}", flush=True)

    model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs, validation_split=0.1, verbose=0, callbacks=[Timer()])
    acc = model.evaluate(xt, yt, verbose=0)[1]
    med = statistics.median(times[1:] if len(times) > 1 else times)
    print(f"median_epoch_s {med:.4f} test_accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
