"""MNIST: ``load_data()`` returns ``((x_train, y_train), (x_test, y_test))`` as uint8
arrays of shapes (60000, 28, 28), (60000,), (10000, 28, 28), (10000,), as Keras does.

suanli downloads nothing: the four IDX files (``.gz`` or raw) are read from ``MNIST_DIR``
if set, else ``./data/mnist``, ``~/.suanli/datasets/mnist``, and the suanli source tree's
``data/mnist``. When none holds them, ``FileNotFoundError`` lists every place looked.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ... import _native


def load_data(path: str = "mnist.npz") -> Tuple[Tuple[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]:
    """The MNIST arrays (``path`` is accepted for Keras compatibility and ignored)."""
    return _native.load_mnist()
