#!/usr/bin/env python3
"""A small residual CNN on Fashion-MNIST with Keras's functional API, the same program for
suanli and for TensorFlow: `--framework suanli` (the default) imports `suanli as tf`,
`--framework tensorflow` the real one. The model is examples/resnet_fashion.rs's: Conv-BN-ReLU,
a residual block of 32 filters, a strided Conv-BN-ReLU to 64, a residual block of 64,
global average pooling, softmax; Adam, batch 64, 5 epochs, validation_split 0.1.

    python3 examples/python/resnet_fashion.py                       # suanli, 5 epochs
    python3 examples/python/resnet_fashion.py --framework tensorflow --threads 2
    python3 examples/python/resnet_fashion.py --epochs 1 --train-rows 2048   # a quick try

Prints a line per epoch and finally `median_epoch_s SECONDS test_accuracy ACC` (the line the
Rust example's --bench reads from its peers).
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


def fashion(d):
    def load(name):
        return idx(os.path.join(d, name))

    return (load("train-images-idx3-ubyte.gz"), load("train-labels-idx1-ubyte.gz")), (
        load("t10k-images-idx3-ubyte.gz"),
        load("t10k-labels-idx1-ubyte.gz"),
    )


def build(keras, layers):
    def conv_bn_relu(x, filters, stride=1):
        x = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU()(x)

    def residual(x, filters):
        h = conv_bn_relu(x, filters)
        h = layers.Conv2D(filters, 3, padding="same", use_bias=False)(h)
        h = layers.BatchNormalization()(h)
        return layers.ReLU()(layers.Add()([x, h]))

    inputs = keras.Input(shape=(28, 28, 1), name="image")
    h = conv_bn_relu(inputs, 32)
    h = residual(h, 32)
    h = conv_bn_relu(h, 64, 2)
    h = residual(h, 64)
    h = layers.GlobalAveragePooling2D()(h)
    outputs = layers.Dense(10, activation="softmax")(h)
    return keras.Model(inputs, outputs, name="resnet_fashion")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", choices=["suanli", "tensorflow"], default="suanli")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-rows", type=int, default=0)
    a = ap.parse_args()
    if a.framework == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    else:
        import suanli as tf
    keras = tf.keras
    layers = keras.layers
    keras.utils.set_random_seed(a.seed)
    d = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    if not os.path.exists(os.path.join(d, "train-images-idx3-ubyte.gz")):
        d = os.path.join(os.path.dirname(__file__), "..", "..", "data", "fashion-mnist")
    (x, y), (xt, yt) = fashion(d)
    x = x.astype("float32")[..., None] / 255
    xt = xt.astype("float32")[..., None] / 255
    y, yt = y.astype("int64"), yt.astype("int64")
    if a.train_rows:
        x, y = x[: a.train_rows], y[: a.train_rows]
    model = build(keras, layers)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    times = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = self.end = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.end = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            # Training only (validation excluded), as suanli's epoch seconds.
            times.append(self.end - self.t)
            print(f"epoch {epoch + 1}: {times[-1]:.2f}s loss {logs['loss']:.4f} val_accuracy {logs.get('val_accuracy', float('nan')):.4f}", flush=True)

    model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs, validation_split=0.1, verbose=0, callbacks=[Timer()])
    acc = model.evaluate(xt, yt, verbose=0)[1]
    med = statistics.median(times[1:] if len(times) > 1 else times)
    print(f"median_epoch_s {med:.4f} test_accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
