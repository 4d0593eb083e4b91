"""Host-side (NumPy) arithmetic for what Keras lets a program compute eagerly, outside
``fit``: a metric object's ``update_state``/``result`` and a loss object's reductions and
sample weights. Training never goes through here (the engine computes on the device)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

# Keras's epsilon for clipping probabilities in the cross-entropies.
EPSILON = 1e-7


class Scalar(float):
    """A metric's ``result()``: a Python float that also answers ``.numpy()``, as the
    scalar tensor Keras returns does."""

    def numpy(self) -> np.float32:
        return np.float32(self)

    def __repr__(self) -> str:
        return f"{float(self)!r}"


def array(value: Any, what: str) -> np.ndarray:
    """``value`` (a NumPy array, list, number or ``suanli.Tensor``) as a float64 array."""
    if hasattr(value, "numpy") and callable(value.numpy):
        value = value.numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected an array of numbers (NumPy array, list or suanli.Tensor); found {type(value).__name__}") from None


def same_shape(op: str, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """``y_true`` shaped as ``y_pred`` (a target of one fewer axis, or a trailing 1, is
    squeezed/expanded as Keras does); a mismatch is a ``ValueError`` naming both shapes."""
    if y_true.shape == y_pred.shape:
        return y_true
    if y_true.size == y_pred.size and (y_true.ndim + 1 == y_pred.ndim or y_true.ndim == y_pred.ndim + 1):
        return y_true.reshape(y_pred.shape)
    raise ValueError(f"{op}: y_true and y_pred must have the same shape; found {y_true.shape} and {y_pred.shape}")


def per_sample(values: np.ndarray) -> np.ndarray:
    """The mean over every axis but the first (a 1-D array is already per sample)."""
    if values.ndim <= 1:
        return values.reshape(-1)
    return values.reshape(values.shape[0], -1).mean(axis=1)


def weights(op: str, sample_weight: Any, n: int) -> np.ndarray:
    """Per-sample weights: ones, or ``sample_weight`` (a number, or one weight per sample)."""
    if sample_weight is None:
        return np.ones(n)
    w = array(sample_weight, op)
    if w.ndim == 0:
        return np.full(n, float(w))
    w = w.reshape(-1) if w.size == n else w
    if w.shape != (n,):
        raise ValueError(f"{op}: sample_weight must be a number or one weight per sample ({n}); found shape {np.shape(sample_weight)}")
    return w


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def loss_per_sample(name: str, from_logits: bool, y_true: np.ndarray, y_pred: np.ndarray, delta: float = 1.0) -> np.ndarray:
    """Keras's loss of each sample (engine names: mse, mae, huber and the cross-entropies)."""
    if name == "sparse_categorical_crossentropy":
        labels = y_true.reshape(-1)
        if y_pred.ndim != 2 or labels.size != y_pred.shape[0]:
            raise ValueError(f"SparseCategoricalCrossentropy: expected class indices (samples,) and predictions (samples, classes); found {y_true.shape} and {y_pred.shape}")
        if np.any(labels != np.round(labels)) or np.any(labels < 0) or np.any(labels >= y_pred.shape[1]):
            raise ValueError(f"SparseCategoricalCrossentropy: labels must be whole numbers in 0..{y_pred.shape[1] - 1}")
        y_true = np.eye(y_pred.shape[1])[labels.astype(np.int64)]
        name = "categorical_crossentropy"
    y_true = same_shape(name, y_true, y_pred)
    if name == "categorical_crossentropy":
        p = softmax(y_pred) if from_logits else y_pred / y_pred.sum(axis=-1, keepdims=True)
        return -(y_true * np.log(np.clip(p, EPSILON, 1.0 - EPSILON))).sum(axis=-1)
    if name == "binary_crossentropy":
        if from_logits:
            x = y_pred
            elem = np.maximum(x, 0) - x * y_true + np.log1p(np.exp(-np.abs(x)))
        else:
            p = np.clip(y_pred, EPSILON, 1.0 - EPSILON)
            elem = -(y_true * np.log(p) + (1.0 - y_true) * np.log(1.0 - p))
        return elem.mean(axis=-1)
    d = y_true - y_pred
    if name == "mse":
        return (d * d).mean(axis=-1)
    if name == "mae":
        return np.abs(d).mean(axis=-1)
    if name == "huber":
        a = np.abs(d)
        return np.where(a <= delta, 0.5 * d * d, delta * (a - 0.5 * delta)).mean(axis=-1)
    raise ValueError(f"unknown loss {name!r}")


REDUCTIONS = ("sum_over_batch_size", "mean", "sum", "mean_with_sample_weight", "none", None)


def reduce(reduction: Optional[str], losses: np.ndarray, w: Optional[np.ndarray]) -> np.ndarray:
    """Keras's reductions of per-sample losses (weighted by ``w`` when given)."""
    weighted = losses if w is None else losses * w.reshape(losses.shape[:1] + (1,) * (losses.ndim - 1))
    if reduction in ("none", None):
        return weighted
    total = weighted.sum()
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and w is not None:
        return total / w.sum() if w.sum() != 0 else np.float64(0.0)
    return total / max(losses.size, 1)
