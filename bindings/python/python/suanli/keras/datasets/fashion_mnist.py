"""Fashion-MNIST: ``load_data()`` returns ``((x_train, y_train), (x_test, y_test))`` as uint8
arrays of shapes (60000, 28, 28), (60000,), (10000, 28, 28), (10000,), as Keras does
(clothing images in ten classes: 0 T-shirt/top ... 9 ankle boot).

suanli downloads nothing: the four IDX files (``.gz`` or raw) are read from
``FASHION_MNIST_DIR`` if set, else ``./data/fashion-mnist``,
``~/.suanli/datasets/fashion-mnist``, and ``/usr/share/datasets/fashion-mnist`` (Debian's
``dataset-fashion-mnist`` package). When none holds them, ``FileNotFoundError`` lists every
place looked.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ... import _native


def load_data() -> Tuple[Tuple[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]:
    """The Fashion-MNIST arrays."""
    return _native.load_fashion_mnist()
