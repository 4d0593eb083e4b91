"""Metrics, as ``keras.metrics`` names them. suanli computes the accuracy of the loss's kind
on the device during training and evaluation (per-sample sums in the same dispatch as the
loss): ``"accuracy"`` / ``"acc"`` (whatever the loss), ``"sparse_categorical_accuracy"``,
``"categorical_accuracy"``, ``"binary_accuracy"`` (each with the loss it goes with), and the
metric objects below. The logs and ``history.history`` use the name asked for (with
``val_`` for validation), as Keras does. Other metrics (precision, recall, AUC, regression
errors) are refused at ``compile`` with the list of supported ones.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

# Each accuracy name and the loss (engine name) it requires; None: any classification loss.
_ACCURACY = {
    "accuracy": None,
    "acc": None,
    "sparse_categorical_accuracy": "sparse_categorical_crossentropy",
    "categorical_accuracy": "categorical_crossentropy",
    "binary_accuracy": "binary_crossentropy",
}


class Metric:
    """Base of the metric objects: ``name`` is the key in the logs."""

    _kind = "accuracy"

    def __init__(self, name: Optional[str] = None, dtype: Any = None) -> None:
        self.name = name or self._default_name

    _default_name = "accuracy"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class Accuracy(Metric):
    _default_name = "accuracy"
    _kind = "accuracy"


class SparseCategoricalAccuracy(Metric):
    _default_name = "sparse_categorical_accuracy"
    _kind = "sparse_categorical_accuracy"


class CategoricalAccuracy(Metric):
    _default_name = "categorical_accuracy"
    _kind = "categorical_accuracy"


class BinaryAccuracy(Metric):
    """Binary accuracy at Keras's default threshold of 0.5 (other thresholds are refused)."""

    _default_name = "binary_accuracy"
    _kind = "binary_accuracy"

    def __init__(self, name: Optional[str] = None, dtype: Any = None, threshold: float = 0.5) -> None:
        if float(threshold) != 0.5:
            raise ValueError(f"BinaryAccuracy: only threshold=0.5 is supported; found {threshold!r}")
        super().__init__(name, dtype)


def resolve(metric: Any, loss: str, regression: bool) -> str:
    """The logs key of ``metric`` (a name or an object), checked against the loss."""
    if isinstance(metric, Metric):
        key, kind = metric.name, metric._kind
    elif isinstance(metric, str):
        key, kind = metric, metric
    else:
        key = getattr(metric, "name", None) or getattr(metric, "__name__", None) or repr(metric)
        kind = key
    if kind not in _ACCURACY:
        raise ValueError(
            f"compile: metric {key!r} is not supported; suanli computes {sorted(_ACCURACY)} "
            "(or the metric objects Accuracy, SparseCategoricalAccuracy, CategoricalAccuracy, BinaryAccuracy)"
        )
    if regression:
        raise ValueError(f"compile: {key!r} needs a classification loss, not {loss!r}")
    need = _ACCURACY[kind]
    if need is not None and need != loss:
        raise ValueError(f"compile: {key!r} goes with the loss {need!r}; this model's loss is {loss!r}")
    return key


__all__ = ["Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "Metric", "SparseCategoricalAccuracy"]
