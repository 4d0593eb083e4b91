"""Metrics, as ``keras.metrics`` names them, all computed on the device during training and
evaluation as per-sample sums in the same program as the loss (an epoch reads them back once):

- accuracy of the loss's kind: ``"accuracy"`` / ``"acc"`` (whatever the loss),
  ``"sparse_categorical_accuracy"``, ``"categorical_accuracy"``, ``"binary_accuracy"`` (each
  with the loss it goes with) and their objects;
- ``"mae"`` / ``"mean_absolute_error"``, ``"mse"`` / ``"mean_squared_error"``,
  ``"precision"``, ``"recall"``, ``"auc"`` and the objects ``MeanAbsoluteError``,
  ``MeanSquaredError``, ``Precision(thresholds=)``, ``Recall(thresholds=)``,
  ``AUC(num_thresholds=)`` (ROC, Keras's interpolation). These judge what ``predict``
  returns (probabilities for a sigmoid or softmax output) against targets shaped like the
  output, so they need a loss with dense targets (not ``sparse_categorical_crossentropy``).

The logs and ``history.history`` use the name asked for (``val_`` for validation), as Keras
does. Anything else is refused at ``compile`` with the list of supported ones.
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


class MeanAbsoluteError(Metric):
    _default_name = "mean_absolute_error"
    _kind = "mae"


class MeanSquaredError(Metric):
    _default_name = "mean_squared_error"
    _kind = "mse"


def _threshold(cls: str, thresholds: Any, top_k: Any, class_id: Any) -> float:
    if top_k is not None or class_id is not None:
        raise ValueError(f"{cls}: top_k and class_id are not supported")
    if thresholds is None:
        return 0.5
    if isinstance(thresholds, (list, tuple)):
        if len(thresholds) != 1:
            raise ValueError(f"{cls}: one threshold is supported; found {list(thresholds)!r}")
        thresholds = thresholds[0]
    t = float(thresholds)
    if not 0.0 < t < 1.0:
        raise ValueError(f"{cls}: the threshold must be in (0, 1); found {t!r}")
    return t


class Precision(Metric):
    """TP / (TP + FP) over every output at ``prediction > thresholds`` (default 0.5)."""

    _default_name = "precision"
    _kind = "precision"

    def __init__(self, thresholds: Any = None, top_k: Any = None, class_id: Any = None, name: Optional[str] = None, dtype: Any = None) -> None:
        super().__init__(name, dtype)
        self._param = _threshold(type(self).__name__, thresholds, top_k, class_id)


class Recall(Precision):
    """TP / (TP + FN) over every output at ``prediction > thresholds`` (default 0.5)."""

    _default_name = "recall"
    _kind = "recall"


class AUC(Metric):
    """Area under the ROC curve by Keras's interpolation over ``num_thresholds`` evenly spread
    thresholds (predictions clamped to [0, 1]); the PR curve, other summations, explicit
    thresholds and multi-label AUC are refused."""

    _default_name = "auc"
    _kind = "auc"

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC", summation_method: str = "interpolation", name: Optional[str] = None, dtype: Any = None, thresholds: Any = None, multi_label: bool = False, num_labels: Any = None, label_weights: Any = None, from_logits: bool = False) -> None:
        super().__init__(name, dtype)
        if str(curve).upper() != "ROC" or summation_method != "interpolation":
            raise ValueError(f"AUC: only curve='ROC' with summation_method='interpolation' is supported; found curve={curve!r}, summation_method={summation_method!r}")
        if thresholds is not None or multi_label or label_weights is not None or from_logits:
            raise ValueError("AUC: thresholds, multi_label, label_weights and from_logits are not supported")
        if int(num_thresholds) != num_thresholds or not 2 <= int(num_thresholds) <= 1024:
            raise ValueError(f"AUC: num_thresholds must be a whole number in 2..1024; found {num_thresholds!r}")
        self._param = float(num_thresholds)


# The metrics the engine sums beside the loss: each kind's engine name, its key in the engine's
# logs, and the parameter of a name given as a string (Keras's defaults).
_ENGINE = {
    "mae": ("mae", "mean_absolute_error", 0.0),
    "mean_absolute_error": ("mae", "mean_absolute_error", 0.0),
    "mse": ("mse", "mean_squared_error", 0.0),
    "mean_squared_error": ("mse", "mean_squared_error", 0.0),
    "precision": ("precision", "precision", 0.5),
    "recall": ("recall", "recall", 0.5),
    "auc": ("auc", "auc", 200.0),
}


def engine_metric(metric: Any, loss: str) -> Optional[Tuple[str, str, Tuple[str, float]]]:
    """``(key, engine logs key, (engine name, parameter))`` for a metric the engine sums
    beside the loss, None for an accuracy; checked against the loss."""
    if isinstance(metric, Metric):
        key, kind, param = metric.name, metric._kind, getattr(metric, "_param", None)
    elif isinstance(metric, str):
        key, kind, param = metric, metric, None
    else:
        return None
    if kind not in _ENGINE:
        return None
    name, logs_key, default = _ENGINE[kind]
    if loss == "sparse_categorical_crossentropy":
        raise ValueError(
            f"compile: the metric {key!r} compares predictions with targets shaped like the output; "
            "sparse_categorical_crossentropy's targets are class indices (use one-hot targets "
            "with categorical_crossentropy, or binary_crossentropy)"
        )
    return key, logs_key, (name, default if param is None else param)


def resolve(metric: Any, loss: str, regression: bool) -> str:
    """The logs key of ``metric`` (a name or an object), checked against the loss."""
    found = engine_metric(metric, loss)
    if found is not None:
        return found[0]
    if isinstance(metric, Metric):
        key, kind = metric.name, metric._kind
    elif isinstance(metric, str):
        key, kind = metric, metric
    else:
        key = getattr(metric, "name", None) or getattr(metric, "__name__", None) or repr(metric)
        kind = key
    if kind not in _ACCURACY:
        raise ValueError(
            f"compile: metric {key!r} is not supported; suanli computes {sorted(_ACCURACY) + sorted(_ENGINE)} "
            "(or the metric objects Accuracy, SparseCategoricalAccuracy, CategoricalAccuracy, BinaryAccuracy, "
            "MeanAbsoluteError, MeanSquaredError, Precision, Recall, AUC)"
        )
    if regression:
        raise ValueError(f"compile: {key!r} needs a classification loss, not {loss!r}")
    need = _ACCURACY[kind]
    if need is not None and need != loss:
        raise ValueError(f"compile: {key!r} goes with the loss {need!r}; this model's loss is {loss!r}")
    return key


__all__ = ["AUC", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "MeanAbsoluteError", "MeanSquaredError", "Metric", "Precision", "Recall", "SparseCategoricalAccuracy"]
