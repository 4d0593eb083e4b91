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

A metric object also works on its own, as Keras's do: ``m.update_state(y_true, y_pred,
sample_weight=None)`` adds a batch, ``m.result()`` is the value so far (a float with
``.numpy()``), ``m.reset_state()`` starts again. That runs on the host in NumPy, with Keras's
definitions (``Accuracy`` there is Keras's exact equality of values).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _host

# Each accuracy name and the loss (engine name) it requires; None: any classification loss.
_ACCURACY = {
    "accuracy": None,
    "acc": None,
    "sparse_categorical_accuracy": "sparse_categorical_crossentropy",
    "categorical_accuracy": "categorical_crossentropy",
    "binary_accuracy": "binary_crossentropy",
}


class Metric:
    """Base of the metric objects: ``name`` is the key in the logs. Standalone, a metric is
    the weighted mean of a per-sample value (``_values``) over every ``update_state``."""

    _kind = "accuracy"
    _default_name = "accuracy"

    def __init__(self, name: Optional[str] = None, dtype: Any = None) -> None:
        if dtype not in (None, "float32"):
            raise ValueError(f"{type(self).__name__}: dtype must be float32 (or None); found {dtype!r}")
        self.name = name or self._default_name
        self.dtype = "float32"
        self.reset_state()

    def reset_state(self) -> None:
        """Forgets every batch given to ``update_state``."""
        self._total = 0.0
        self._count = 0.0

    # Keras 2's name.
    def reset_states(self) -> None:
        self.reset_state()

    def _values(self, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: no standalone computation")

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Adds a batch: ``y_true`` and ``y_pred`` as arrays (or Tensors), ``sample_weight``
        a number or one weight per sample."""
        op = f"{type(self).__name__}.update_state"
        v = self._values(_host.array(y_true, op), _host.array(y_pred, op))
        w = _host.weights(op, sample_weight, len(v))
        self._total += float((v * w).sum())
        self._count += float(w.sum())

    def result(self) -> _host.Scalar:
        """The weighted mean so far (0.0 before any sample)."""
        return _host.Scalar(self._total / self._count if self._count else 0.0)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> _host.Scalar:
        self.update_state(y_true, y_pred, sample_weight)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> "Metric":
        return cls(**config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _argmax_equal(op: str, labels: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    if y_pred.ndim < 2 or labels.size * y_pred.shape[-1] != y_pred.size:
        raise ValueError(f"{op}: expected one label per row of y_pred {y_pred.shape}; found y_true of shape {labels.shape}")
    return _host.per_sample((np.argmax(y_pred, axis=-1) == labels.reshape(y_pred.shape[:-1])).astype(np.float64))


class Accuracy(Metric):
    """In ``compile``, the accuracy of the loss's kind; standalone, Keras's ``Accuracy``:
    how often ``y_pred`` equals ``y_true`` exactly."""

    _default_name = "accuracy"
    _kind = "accuracy"

    def _values(self, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
        y_true = _host.same_shape("Accuracy", y_true, y_pred)
        return _host.per_sample((y_true == y_pred).astype(np.float64))


class SparseCategoricalAccuracy(Metric):
    _default_name = "sparse_categorical_accuracy"
    _kind = "sparse_categorical_accuracy"

    def _values(self, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
        return _argmax_equal("SparseCategoricalAccuracy", y_true, y_pred)


class CategoricalAccuracy(Metric):
    _default_name = "categorical_accuracy"
    _kind = "categorical_accuracy"

    def _values(self, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
        y_true = _host.same_shape("CategoricalAccuracy", y_true, y_pred)
        return _argmax_equal("CategoricalAccuracy", np.argmax(y_true, axis=-1), y_pred)


class BinaryAccuracy(Metric):
    """Binary accuracy at Keras's default threshold of 0.5 (other thresholds are refused)."""

    _default_name = "binary_accuracy"
    _kind = "binary_accuracy"

    def __init__(self, name: Optional[str] = None, dtype: Any = None, threshold: float = 0.5) -> None:
        if float(threshold) != 0.5:
            raise ValueError(f"BinaryAccuracy: only threshold=0.5 is supported; found {threshold!r}")
        super().__init__(name, dtype)
        self.threshold = 0.5

    def _values(self, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
        y_true = _host.same_shape("BinaryAccuracy", y_true, y_pred)
        return _host.per_sample((y_true == (y_pred > self.threshold)).astype(np.float64))


class MeanAbsoluteError(Metric):
    _default_name = "mean_absolute_error"
    _kind = "mae"

    def _values(self, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
        return _host.per_sample(_host.loss_per_sample(self._kind, False, y_true, y_pred))


class MeanSquaredError(MeanAbsoluteError):
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
        self.thresholds = self._param

    def reset_state(self) -> None:
        self._counts = np.zeros((1, 4))  # per threshold: tp, fp, fn, tn (weighted)

    def _thresholds(self) -> np.ndarray:
        return np.array([self._param])

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Adds a batch to the confusion counts (every output counts; ``prediction >
        threshold`` is positive, as Keras)."""
        op = f"{type(self).__name__}.update_state"
        p = _host.array(y_pred, op)
        t = _host.same_shape(op, _host.array(y_true, op), p) > 0
        w = _host.weights(op, sample_weight, len(p) if p.ndim else 1)
        w = np.broadcast_to(w.reshape((-1,) + (1,) * max(p.ndim - 1, 0)), p.shape).reshape(-1)
        p, t = p.reshape(-1), t.reshape(-1)
        if self._kind == "auc":
            p = np.clip(p, 0.0, 1.0)
        pos = p[None, :] > self._thresholds()[:, None]
        self._counts += np.stack([(pos & t) @ w, (pos & ~t) @ w, (~pos & t) @ w, (~pos & ~t) @ w], axis=1)

    def result(self) -> _host.Scalar:
        tp, fp, fn, _ = self._counts[0]
        d = tp + (fn if self._kind == "recall" else fp)
        return _host.Scalar(tp / d if d else 0.0)


class Recall(Precision):
    """TP / (TP + FN) over every output at ``prediction > thresholds`` (default 0.5)."""

    _default_name = "recall"
    _kind = "recall"


class AUC(Precision):
    """Area under the ROC curve by Keras's interpolation over ``num_thresholds`` evenly spread
    thresholds (predictions clamped to [0, 1]); the PR curve, other summations, explicit
    thresholds and multi-label AUC are refused."""

    _default_name = "auc"
    _kind = "auc"

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC", summation_method: str = "interpolation", name: Optional[str] = None, dtype: Any = None, thresholds: Any = None, multi_label: bool = False, num_labels: Any = None, label_weights: Any = None, from_logits: bool = False) -> None:
        Metric.__init__(self, name, dtype)
        if str(curve).upper() != "ROC" or summation_method != "interpolation":
            raise ValueError(f"AUC: only curve='ROC' with summation_method='interpolation' is supported; found curve={curve!r}, summation_method={summation_method!r}")
        if thresholds is not None or multi_label or label_weights is not None or from_logits:
            raise ValueError("AUC: thresholds, multi_label, label_weights and from_logits are not supported")
        if int(num_thresholds) != num_thresholds or not 2 <= int(num_thresholds) <= 1024:
            raise ValueError(f"AUC: num_thresholds must be a whole number in 2..1024; found {num_thresholds!r}")
        self._param = float(num_thresholds)
        self.num_thresholds = int(num_thresholds)
        self.reset_state()

    def reset_state(self) -> None:
        self._counts = np.zeros((int(getattr(self, "_param", 2)), 4))

    def _thresholds(self) -> np.ndarray:
        # Keras's: evenly spread in (0, 1), with -epsilon and 1 + epsilon at the ends.
        n = int(self._param)
        inner = [(i + 1) / (n - 1) for i in range(n - 2)]
        return np.array([-_host.EPSILON] + inner + [1.0 + _host.EPSILON])

    def result(self) -> _host.Scalar:
        tp, fp, fn, tn = self._counts.T
        tpr = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=(tp + fn) != 0)
        fpr = np.divide(fp, fp + tn, out=np.zeros_like(fp), where=(fp + tn) != 0)
        return _host.Scalar(float(((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2.0).sum()))


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
