"""Losses by Keras name or object. Cross-entropies run fused with the last layer's softmax
(or sigmoid) on the device; ``from_logits=True`` goes with a linear last layer.

A loss object is callable as Keras's are: ``loss_fn(y_true, y_pred)`` returns the mean loss
as a scalar ``suanli.Tensor`` (``.numpy()``), computed on the device by the kernels training
uses (``y_pred`` a Tensor, or an array uploaded to the current device). With
``sample_weight`` or a ``reduction`` other than the mean (``"sum"``, ``"none"``), it is
computed on the host in NumPy, as Keras defines it, and returned as a Tensor."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from .. import _native
from .._device import current_device
from . import _host

_NAMES = {
    "sparse_categorical_crossentropy": "sparse_categorical_crossentropy",
    "categorical_crossentropy": "categorical_crossentropy",
    "binary_crossentropy": "binary_crossentropy",
    "mse": "mse",
    "mean_squared_error": "mse",
    "MSE": "mse",
    "mae": "mae",
    "mean_absolute_error": "mae",
    "MAE": "mae",
    "huber": "huber",
    "huber_loss": "huber",
}

# The losses on the outputs themselves: no accuracy, any target values.
REGRESSION = {"mse", "mae", "huber"}


class Loss:
    """Base of the loss objects. ``reduction`` applies when the object is called (Keras's
    ``"sum_over_batch_size"``, ``"mean"``, ``"sum"``, ``"mean_with_sample_weight"``,
    ``"none"``/None); training always takes the mean over the batch, so ``compile`` refuses
    the others."""

    _name = ""
    _default_name = "loss"

    def __init__(self, from_logits: bool = False, reduction: Optional[str] = "sum_over_batch_size", name: Optional[str] = None, dtype: Any = None) -> None:
        cls = type(self).__name__
        if reduction == "auto":  # Keras 2's default
            reduction = "sum_over_batch_size"
        if reduction not in _host.REDUCTIONS:
            raise ValueError(f"{cls}: reduction must be one of {list(_host.REDUCTIONS)}; found {reduction!r}")
        if dtype not in (None, "float32"):
            raise ValueError(f"{cls}: dtype must be float32 (or None); found {dtype!r}")
        self.from_logits = bool(from_logits)
        self.reduction = reduction
        self.name = name or self._default_name

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """The loss of ``y_pred`` against ``y_true`` as a Tensor: a scalar (the batch's mean
        by default), or one loss per sample with ``reduction="none"``."""
        if sample_weight is None and self.reduction in ("sum_over_batch_size", "mean", "mean_with_sample_weight"):
            dev = getattr(y_pred, "device", None)
            return _native.loss_value(self._name, self.from_logits, y_true, y_pred, dev if isinstance(dev, _native.Device) else current_device())
        cls = type(self).__name__
        p = _host.array(y_pred, cls)
        losses = _host.loss_per_sample(self._name, self.from_logits, _host.array(y_true, cls), p, getattr(self, "delta", 1.0))
        w = None if sample_weight is None else _host.weights(cls, sample_weight, losses.shape[0] if losses.ndim else 1)
        out = _host.reduce(self.reduction, losses, w)
        from .._ops import convert_to_tensor

        return convert_to_tensor(np.asarray(out, dtype=np.float32))

    def get_config(self) -> dict:
        config = {"name": self.name, "reduction": self.reduction, "dtype": None}
        if isinstance(self, (SparseCategoricalCrossentropy, CategoricalCrossentropy)):
            config["from_logits"] = self.from_logits
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Loss":
        return cls(**config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(from_logits={self.from_logits}, reduction={self.reduction!r})"


def _fixed(cls: str, **given: Any) -> None:
    """Keras arguments suanli takes at their defaults only."""
    defaults = {"label_smoothing": 0.0, "axis": -1, "ignore_class": None}
    for k, v in given.items():
        if v != defaults[k]:
            raise ValueError(f"{cls}: {k}={v!r} is not supported; only Keras's default {k}={defaults[k]!r}")


class SparseCategoricalCrossentropy(Loss):
    _name = "sparse_categorical_crossentropy"
    _default_name = "sparse_categorical_crossentropy"

    def __init__(self, from_logits: bool = False, ignore_class: Any = None, reduction: Optional[str] = "sum_over_batch_size", name: Optional[str] = None, dtype: Any = None) -> None:
        _fixed(type(self).__name__, ignore_class=ignore_class)
        super().__init__(from_logits, reduction, name, dtype)


class CategoricalCrossentropy(Loss):
    _name = "categorical_crossentropy"
    _default_name = "categorical_crossentropy"

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1, reduction: Optional[str] = "sum_over_batch_size", name: Optional[str] = None, dtype: Any = None) -> None:
        _fixed(type(self).__name__, label_smoothing=label_smoothing, axis=axis)
        super().__init__(from_logits, reduction, name, dtype)


class BinaryCrossentropy(CategoricalCrossentropy):
    _name = "binary_crossentropy"
    _default_name = "binary_crossentropy"


class MeanSquaredError(Loss):
    _name = "mse"
    _default_name = "mean_squared_error"

    def __init__(self, reduction: Optional[str] = "sum_over_batch_size", name: Optional[str] = None, dtype: Any = None) -> None:
        super().__init__(False, reduction, name, dtype)


class MeanAbsoluteError(MeanSquaredError):
    _name = "mae"
    _default_name = "mean_absolute_error"


class Huber(Loss):
    """Keras's Huber loss; only its default ``delta=1.0``."""

    _name = "huber"
    _default_name = "huber_loss"

    def __init__(self, delta: float = 1.0, reduction: Optional[str] = "sum_over_batch_size", name: Optional[str] = None, dtype: Any = None) -> None:
        if float(delta) != 1.0:
            raise ValueError(f"Huber: only delta=1.0 (Keras's default) is supported; found {delta!r}")
        super().__init__(False, reduction, name, dtype)
        self.delta = 1.0


def _resolve(loss: Union[str, Loss]) -> Tuple[str, bool]:
    """(engine name, from_logits) of a loss name or object."""
    if isinstance(loss, Loss):
        if loss.reduction not in ("sum_over_batch_size", "mean"):
            raise ValueError(
                f"compile: {type(loss).__name__}(reduction={loss.reduction!r}) is not supported for training; "
                "suanli trains on the mean over the batch (reduction='sum_over_batch_size'); other reductions apply when the loss is called"
            )
        return loss._name, loss.from_logits
    if isinstance(loss, str) and loss in _NAMES:
        return _NAMES[loss], False
    if isinstance(loss, str) and loss.lower() in _NAMES:
        return _NAMES[loss.lower()], False
    raise ValueError(f"loss: expected one of {sorted(_NAMES)} or a loss object; found {loss!r}")


__all__ = ["BinaryCrossentropy", "CategoricalCrossentropy", "Huber", "Loss", "MeanAbsoluteError", "MeanSquaredError", "SparseCategoricalCrossentropy"]
