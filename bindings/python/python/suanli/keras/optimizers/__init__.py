"""Optimizers, with Keras's defaults. They run fused into the backward matmul on the device.

``learning_rate`` is a number, a schedule from ``optimizers.schedules``, or any callable of
the step count; it may be changed between epochs (``model.optimizer.learning_rate = ...``,
as ``LearningRateScheduler`` and ``ReduceLROnPlateau`` do). ``fit`` reads it for every step.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Union

from . import schedules


class Optimizer:
    """Base class; ``_native_args`` is what the engine's ``compile`` takes."""

    _name = ""

    def __init__(self, learning_rate: Any, **kwargs: Any) -> None:
        self.learning_rate = learning_rate
        self._extra: Dict[str, Any] = kwargs

    @property
    def learning_rate(self) -> Any:
        """A number, or a schedule (any callable of the step count)."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if callable(value):
            self._learning_rate = value
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise ValueError(f"{type(self).__name__}: learning_rate must be a number or a schedule; found {value!r}")
        v = float(value)
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{type(self).__name__}: learning_rate must be finite and > 0; found {value!r}")
        self._learning_rate = v

    # Keras's alias.
    lr = learning_rate

    def _lr_at(self, step: int) -> float:
        """The learning rate of the step after ``step`` steps taken."""
        lr = self._learning_rate
        return float(lr(step)) if callable(lr) else lr

    def _native_args(self) -> Dict[str, Any]:
        return {"optimizer": self._name, "learning_rate": self._lr_at(0), **self._extra}

    def get_config(self) -> Dict[str, Any]:
        return {"name": self._name, "learning_rate": self._learning_rate, **self._extra}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"


class SGD(Optimizer):
    _name = "sgd"

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False, **kwargs: Any) -> None:
        clip = _clip("SGD", kwargs)
        super().__init__(learning_rate, momentum=float(momentum), nesterov=bool(nesterov), **clip)


class Adam(Optimizer):
    _name = "adam"

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7, **kwargs: Any) -> None:
        clip = _clip("Adam", kwargs)
        super().__init__(learning_rate, beta_1=float(beta_1), beta_2=float(beta_2), epsilon=float(epsilon), **clip)


class AdamW(Optimizer):
    _name = "adamw"

    def __init__(self, learning_rate: float = 0.001, weight_decay: float = 0.004, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7, **kwargs: Any) -> None:
        clip = _clip("AdamW", kwargs)
        super().__init__(learning_rate, weight_decay=float(weight_decay), beta_1=float(beta_1), beta_2=float(beta_2), epsilon=float(epsilon), **clip)


class RMSprop(Optimizer):
    _name = "rmsprop"

    def __init__(self, learning_rate: float = 0.001, rho: float = 0.9, epsilon: float = 1e-7, **kwargs: Any) -> None:
        clip = _clip("RMSprop", kwargs)
        super().__init__(learning_rate, rho=float(rho), epsilon=float(epsilon), **clip)


_CLIP = ("clipnorm", "clipvalue", "global_clipnorm")


def _clip(name: str, kwargs: Dict[str, Any]) -> Dict[str, float]:
    """Keras's gradient clipping arguments (``clipnorm``, ``clipvalue``, ``global_clipnorm``;
    None for off), checked here; anything else is refused. Clipping makes the engine apply
    the optimizer to whole gradients (the unfused path)."""
    extra = sorted(k for k in kwargs if k not in _CLIP)
    if extra:
        raise TypeError(f"{name}: unsupported arguments {extra}")
    out: Dict[str, float] = {}
    for k in _CLIP:
        v = kwargs.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and v < float("inf")):
            raise ValueError(f"{name}: {k} must be a number > 0 or None; found {v!r}")
        out[k] = float(v)
    if "clipnorm" in out and "global_clipnorm" in out:
        raise ValueError(f"{name}: give clipnorm or global_clipnorm, not both")
    return out


_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop}


def get(identifier: Union[str, Optimizer]) -> Optimizer:
    """An optimizer from its name (``"adam"``) or an optimizer object."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"optimizer: expected one of {sorted(_BY_NAME)} or an optimizer object; found {identifier!r}")


__all__ = ["Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "get", "schedules"]
