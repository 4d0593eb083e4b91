"""``keras.utils``: ``set_random_seed`` and ``to_categorical``."""

from __future__ import annotations

from typing import Any, Optional

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


def to_categorical(x: Any = None, num_classes: Optional[int] = None, dtype: str = "float32", y: Any = None) -> np.ndarray:
    """One-hot encoding of integer labels, as Keras's: ``x`` (Keras 2 calls it ``y``) of shape
    ``s`` gives ``s + (num_classes,)`` (a trailing axis of 1 is dropped first)."""
    if (x is None) == (y is None):
        raise TypeError("to_categorical: give the labels once, as x (or Keras 2's y)")
    labels = np.asarray(x if x is not None else y)
    shape = labels.shape[:-1] if labels.ndim > 1 and labels.shape[-1] == 1 else labels.shape
    flat = labels.astype("int64").reshape(-1)
    if flat.size and (flat.min() < 0 or np.any(flat != labels.reshape(-1))):
        raise ValueError("to_categorical: labels must be whole numbers >= 0")
    n = int(num_classes) if num_classes is not None else (int(flat.max()) + 1 if flat.size else 0)
    if flat.size and flat.max() >= n:
        raise ValueError(f"to_categorical: label {int(flat.max())} is out of range for num_classes={n}")
    out = np.zeros((flat.size, n), dtype=dtype)
    out[np.arange(flat.size), flat] = 1
    return out.reshape(tuple(shape) + (n,))


__all__ = ["PyDataset", "set_random_seed", "to_categorical"]
