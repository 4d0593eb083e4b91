"""``keras.utils``: ``set_random_seed`` and ``to_categorical``."""

from __future__ import annotations

from typing import Optional

import numpy as np

_seed = 0

# Above this many bytes of features per epoch, a batched source (PyDataset, generator) is
# streamed to the device in chunks instead of uploaded once (see keras/_data.py).
MATERIALISE_LIMIT_BYTES = 512 << 20


class PyDataset:
    """Keras's ``PyDataset``: subclass it with ``__len__`` (batches per epoch) and
    ``__getitem__(i)`` (batch ``i`` as ``(x, y)``); ``on_epoch_end`` is called after every
    epoch a streamed dataset trains. ``workers``, ``use_multiprocessing`` and
    ``max_queue_size`` are accepted (batches are fetched on the calling thread)."""

    def __init__(self, workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10) -> None:
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = max_queue_size

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, index: int):
        raise NotImplementedError

    def on_epoch_end(self) -> None:
        pass


def set_random_seed(seed: int) -> None:
    """The seed of the initial weights of models built from now on and of the shuffles and
    dropout masks of ``fit`` (suanli is deterministic: the same seed gives the same run)."""
    global _seed
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"set_random_seed: expected a non-negative integer; found {seed!r}")
    _seed = seed


def seed() -> int:
    return _seed


def to_categorical(y, num_classes: Optional[int] = None, dtype: str = "float32") -> np.ndarray:
    """One-hot rows of integer labels (as Keras)."""
    y = np.asarray(y, dtype="int64").reshape(-1)
    if y.size and y.min() < 0:
        raise ValueError("to_categorical: labels must be non-negative")
    n = int(num_classes) if num_classes is not None else (int(y.max()) + 1 if y.size else 0)
    out = np.zeros((y.size, n), dtype=dtype)
    out[np.arange(y.size), y] = 1
    return out


__all__ = ["PyDataset", "set_random_seed", "to_categorical"]
