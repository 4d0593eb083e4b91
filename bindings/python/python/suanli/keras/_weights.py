"""Per-row loss weights from Keras's ``sample_weight`` and ``class_weight``. Each row's loss
(and so its gradient) is multiplied by its weight before the batch mean, as Keras's
``sum_over_batch_size`` reduction does; the engine keeps the weights on the device beside
the rows (``Dataset::with_weights``). Accuracy and the other metrics stay unweighted, as
Keras's ``metrics`` (not ``weighted_metrics``) are.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np


def _labels(y: Any, what: str) -> np.ndarray:
    """Each row's class: the label itself, or the one-hot row's argmax."""
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] > 1:
        return a.argmax(axis=1)
    a = a.reshape(len(a), -1)
    if a.shape[1] != 1:
        raise ValueError(f"{what}: class_weight needs one label per row or one-hot rows; found targets of shape {np.asarray(y).shape}")
    a = a[:, 0]
    if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
        raise ValueError(f"{what}: class_weight needs whole-number labels")
    return a.astype(np.int64)


def row_weights(what: str, y: Any, rows: int, sample_weight: Any, class_weight: Optional[Dict[int, float]]) -> Optional[List[float]]:
    """The weight of every row, or None when neither argument is given."""
    if sample_weight is not None and class_weight is not None:
        raise ValueError(f"{what}: give class_weight or sample_weight, not both (Keras refuses both too)")
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.ndim > 1:
            w = w.reshape(len(w), -1)
            if w.shape[1] != 1:
                raise ValueError(f"{what}: sample_weight must hold one weight per row; found shape {np.asarray(sample_weight).shape}")
        w = w.reshape(-1)
    elif class_weight is not None:
        if not isinstance(class_weight, dict):
            raise ValueError(f"{what}: class_weight must be a dict of class index to weight; found {type(class_weight).__name__}")
        labels = _labels(y, what)
        table = {int(k): float(v) for k, v in class_weight.items()}
        # Classes the dict leaves out weigh 1, as Keras's lookup gives them.
        w = np.array([table.get(int(c), 1.0) for c in labels], dtype=np.float64)
    else:
        return None
    if len(w) != rows:
        raise ValueError(f"{what}: sample_weight must hold one weight per row ({rows}); found {len(w)}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        bad = int(np.argmax(~np.isfinite(w) | (w < 0)))
        raise ValueError(f"{what}: weights must be finite and >= 0; found {w[bad]} at row {bad}")
    return w.astype(np.float32).tolist()
