"""Optimizers, with Keras's defaults. They run fused into the backward matmul on the device."""

from __future__ import annotations

from typing import Any, Dict, Union


class Optimizer:
    """Base class; ``_native_args`` is what the engine's ``compile`` takes."""

    _name = ""

    def __init__(self, learning_rate: float, **kwargs: Any) -> None:
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise ValueError(
                f"{type(self).__name__}: learning_rate must be a number (schedules are not supported); found {learning_rate!r}"
            )
        self.learning_rate = float(learning_rate)
        self._extra: Dict[str, Any] = kwargs

    def _native_args(self) -> Dict[str, Any]:
        return {"optimizer": self._name, "learning_rate": self.learning_rate, **self._extra}

    def get_config(self) -> Dict[str, Any]:
        return {"name": self._name, "learning_rate": self.learning_rate, **self._extra}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"


class SGD(Optimizer):
    _name = "sgd"

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False, **kwargs: Any) -> None:
        _no_extra("SGD", kwargs)
        super().__init__(learning_rate, momentum=float(momentum), nesterov=bool(nesterov))


class Adam(Optimizer):
    _name = "adam"

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7, **kwargs: Any) -> None:
        _no_extra("Adam", kwargs)
        super().__init__(learning_rate, beta_1=float(beta_1), beta_2=float(beta_2), epsilon=float(epsilon))


class AdamW(Optimizer):
    _name = "adamw"

    def __init__(self, learning_rate: float = 0.001, weight_decay: float = 0.004, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7, **kwargs: Any) -> None:
        _no_extra("AdamW", kwargs)
        super().__init__(learning_rate, weight_decay=float(weight_decay), beta_1=float(beta_1), beta_2=float(beta_2), epsilon=float(epsilon))


class RMSprop(Optimizer):
    _name = "rmsprop"

    def __init__(self, learning_rate: float = 0.001, rho: float = 0.9, epsilon: float = 1e-7, **kwargs: Any) -> None:
        _no_extra("RMSprop", kwargs)
        super().__init__(learning_rate, rho=float(rho), epsilon=float(epsilon))


def _no_extra(name: str, kwargs: Dict[str, Any]) -> None:
    if kwargs:
        raise TypeError(f"{name}: unsupported arguments {sorted(kwargs)}")


_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop}


def get(identifier: Union[str, Optimizer]) -> Optimizer:
    """An optimizer from its name (``"adam"``) or an optimizer object."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"optimizer: expected one of {sorted(_BY_NAME)} or an optimizer object; found {identifier!r}")
