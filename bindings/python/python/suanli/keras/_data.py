"""Batched data sources for ``fit``, ``evaluate`` and ``predict``: a ``keras.utils.PyDataset``
(``__len__`` and ``__getitem__`` giving ``(x, y)`` batches) or a generator/iterator of such
batches, as Keras takes them.

An epoch's batches are either *materialised* (concatenated once and uploaded as one device
dataset: the fast path, every epoch trains on those same batches) when they hold at most
``utils.MATERIALISE_LIMIT_BYTES`` of features, or *streamed* (fetched again every epoch
and uploaded in chunks of whole batches of at most that size, each trained in one call of the
engine) when they hold more. Either way the batches train in the order the source gives them
(``shuffle`` does not reorder a dataset's batches, as in Keras), and the optimizer's step
count, learning-rate schedule and dropout masks run on across chunks, so both paths give the
same weights.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional, Tuple

import numpy as np


def is_batched(x: Any) -> bool:
    """Whether ``x`` is a source of batches rather than an array."""
    if x is None or isinstance(x, (np.ndarray, list, tuple, str, bytes)):
        return False
    if hasattr(x, "__array__") or hasattr(x, "numpy"):
        return False
    if hasattr(x, "__getitem__") and hasattr(x, "__len__"):
        return True
    return hasattr(x, "__next__") or hasattr(x, "__iter__")


def _split(batch: Any, what: str) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    if isinstance(batch, (tuple, list)) and len(batch) in (1, 2, 3):
        if len(batch) == 3 and batch[2] is not None:
            raise ValueError(f"{what}: sample weights in a batch are not supported")
        xb = np.asarray(batch[0])
        yb = None if len(batch) == 1 or batch[1] is None else np.asarray(batch[1])
        return xb, yb
    return np.asarray(batch), None


def batches(source: Any, steps: Optional[int], what: str) -> Iterator[Tuple[np.ndarray, Optional[np.ndarray]]]:
    """One epoch of ``(x, y)`` batches: ``len(source)`` of a dataset (or ``steps``), a
    generator until it ends (or ``steps``)."""
    if hasattr(source, "__getitem__") and hasattr(source, "__len__"):
        n = len(source) if steps is None else min(int(steps), len(source))
        for i in range(n):
            yield _split(source[i], what)
        return
    it = iter(source)
    i = 0
    while steps is None or i < int(steps):
        try:
            b = next(it)
        except StopIteration:
            if i == 0:
                raise ValueError(f"{what}: the generator gave no batches") from None
            return
        yield _split(b, what)
        i += 1


def chunks(source: Any, steps: Optional[int], limit: int, what: str) -> Iterator[Tuple[np.ndarray, Optional[np.ndarray], int]]:
    """Whole batches concatenated into chunks of at most ``limit`` bytes of features (a
    batch larger than that is a chunk of its own): ``(x, y, batch size)``."""
    xs: List[np.ndarray] = []
    ys: List[np.ndarray] = []
    size = 0
    batch_size = 0
    for xb, yb in batches(source, steps, what):
        if len(xb) == 0:
            continue
        batch_size = max(batch_size, len(xb))
        if xs and size + xb.nbytes > limit:
            yield np.concatenate(xs), (np.concatenate(ys) if ys else None), batch_size
            xs, ys, size = [], [], 0
        xs.append(xb)
        if yb is not None:
            ys.append(yb)
        size += xb.nbytes
    if xs:
        yield np.concatenate(xs), (np.concatenate(ys) if ys else None), batch_size
