"""Losses by Keras name or object. Cross-entropies run fused with the last layer's softmax
(or sigmoid) on the device; ``from_logits=True`` goes with a linear last layer.

A loss object is callable as Keras's are: ``loss_fn(y_true, y_pred)`` returns the mean loss
as a scalar ``suanli.Tensor`` (``.numpy()``), computed on the device by the kernels training
uses (``y_pred`` a Tensor, or an array uploaded to the current device)."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from .. import _native
from .._device import current_device

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
    _name = ""

    def __init__(self, from_logits: bool = False) -> None:
        self.from_logits = bool(from_logits)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """The mean loss of ``y_pred`` against ``y_true``, a scalar Tensor."""
        if sample_weight is not None:
            raise ValueError(f"{type(self).__name__}: sample_weight is not supported yet")
        dev = getattr(y_pred, "device", None)
        return _native.loss_value(self._name, self.from_logits, y_true, y_pred, dev if isinstance(dev, _native.Device) else current_device())

    def get_config(self) -> dict:
        return {"name": self._name, "from_logits": self.from_logits}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(from_logits={self.from_logits})"


class SparseCategoricalCrossentropy(Loss):
    _name = "sparse_categorical_crossentropy"


class CategoricalCrossentropy(Loss):
    _name = "categorical_crossentropy"


class BinaryCrossentropy(Loss):
    _name = "binary_crossentropy"


class MeanSquaredError(Loss):
    _name = "mse"

    def __init__(self) -> None:
        super().__init__(False)


class MeanAbsoluteError(Loss):
    _name = "mae"

    def __init__(self) -> None:
        super().__init__(False)


class Huber(Loss):
    """Keras's Huber loss; only its default ``delta=1.0``."""

    _name = "huber"

    def __init__(self, delta: float = 1.0) -> None:
        if float(delta) != 1.0:
            raise ValueError(f"Huber: only delta=1.0 (Keras's default) is supported; found {delta!r}")
        super().__init__(False)
        self.delta = 1.0


def _resolve(loss: Union[str, Loss]) -> Tuple[str, bool]:
    """(engine name, from_logits) of a loss name or object."""
    if isinstance(loss, Loss):
        return loss._name, loss.from_logits
    if isinstance(loss, str) and loss in _NAMES:
        return _NAMES[loss], False
    if isinstance(loss, str) and loss.lower() in _NAMES:
        return _NAMES[loss.lower()], False
    raise ValueError(f"loss: expected one of {sorted(_NAMES)} or a loss object; found {loss!r}")


__all__ = ["BinaryCrossentropy", "CategoricalCrossentropy", "Huber", "Loss", "MeanAbsoluteError", "MeanSquaredError", "SparseCategoricalCrossentropy"]
