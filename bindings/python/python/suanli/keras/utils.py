"""``keras.utils``: ``set_random_seed`` and ``to_categorical``."""

from __future__ import annotations

from typing import Optional

import numpy as np

_seed = 0


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


__all__ = ["set_random_seed", "to_categorical"]
