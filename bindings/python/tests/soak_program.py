"""Trains a model from Python for several epochs and prints the process's resident memory
after each one (run by test_soak.py in a fresh interpreter): `cnn` is the reported case, a
small Keras CNN with BatchNormalization and strided `same` convolutions on Fashion-MNIST with
validation_split; `mlp` a dense network. PLANT_LEAK=1 keeps a megabyte per epoch alive (the
soak test's planted fault)."""

import mmap
import os
import sys

import numpy as np

from suanli import keras
from suanli.keras import layers

kept = []


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main():
    kind, epochs = sys.argv[1], int(sys.argv[2])
    (x, y), _ = keras.datasets.fashion_mnist.load_data()
    n = 640
    x, y = x[:n].astype("float32") / 255, y[:n]
    keras.utils.set_random_seed(0)
    if kind == "cnn":
        x = x[..., None]
        inputs = keras.Input(shape=(28, 28, 1))
        h = layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(inputs)
        h = layers.BatchNormalization()(h)
        h = layers.ReLU()(h)
        h = layers.Conv2D(16, 3, strides=2, padding="same", activation="relu")(h)
        h = layers.GlobalAveragePooling2D()(h)
        model = keras.Model(inputs, layers.Dense(10, activation="softmax")(h))
    else:
        x = x.reshape(n, 784)
        model = keras.Sequential([keras.Input(shape=(784,)), layers.Dense(64, activation="relu"), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])

    class Rss(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if os.environ.get("PLANT_LEAK"):
                # Fresh pages from the kernel, written: malloc could hand back memory freed
                # earlier, already resident, and hide the leak.
                page = mmap.mmap(-1, 1 << 20)
                page.write(b"\x01" * (1 << 20))
                kept.append(page)
            print(f"rss {rss_mb():.3f}", flush=True)

    model.fit(x, y, batch_size=64, epochs=epochs, validation_split=0.1, verbose=0, callbacks=[Rss()])


if __name__ == "__main__":
    main()
