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

    def exclude_from_weight_decay(self, var_list: Any = None, var_names: Any = None) -> None:
        """Keras's: weights whose name contains one of ``var_names`` (``"bias"``,
        ``"dense_1/kernel"``...) are not decayed. ``var_list`` (variable objects) is not
        supported: name them. A list of which no name is part of any weight's name is
        refused when the model compiles (a typo would decay everything)."""
        if var_list is not None:
            raise NotImplementedError("exclude_from_weight_decay: var_list is not supported by suanli; give var_names (parts of the weights' names, e.g. 'bias')")
        if var_names is None:
            return
        names = [var_names] if isinstance(var_names, str) else list(var_names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"exclude_from_weight_decay: var_names must be non-empty strings; found {var_names!r}")
        self._exclude = names

    def _native_args(self) -> Dict[str, Any]:
        args = {"optimizer": self._name, "learning_rate": self._lr_at(0), **self._extra}
        if getattr(self, "_exclude", None):
            args["decay_exclude"] = list(self._exclude)
        return args

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

# Keras's arguments of every optimizer that suanli takes at their defaults only, and
# Keras 2's that it accepts and ignores (the engine runs its own programs).
_DEFAULTS = {
    "weight_decay": (None, 0, 0.0),
    "use_ema": (False,),
    "ema_momentum": None,
    "ema_overwrite_frequency": None,
    "loss_scale_factor": (None,),
    "gradient_accumulation_steps": None,
    "amsgrad": (False,),
    "centered": (False,),
    "momentum": (0, 0.0),
    "jit_compile": None,
    "is_legacy_optimizer": None,
    "name": None,
    "decay": (0, 0.0, None),
}


# Arguments of _DEFAULTS that only some optimizers have in Keras (SGD(amsgrad=...) is a
# TypeError there too).
_OWN = {"Adam": {"amsgrad"}, "AdamW": {"amsgrad"}, "RMSprop": {"momentum", "centered"}}
_OWN_ANY = {"amsgrad", "momentum", "centered"}


def _clip(name: str, kwargs: Dict[str, Any]) -> Dict[str, float]:
    """Keras's gradient clipping arguments (``clipnorm``, ``clipvalue``, ``global_clipnorm``;
    None for off), checked here. Keras's other arguments are accepted at their defaults
    (``weight_decay`` other than AdamW's, ``amsgrad``, ``use_ema``, ... otherwise raise
    ``NotImplementedError`` saying so); anything else is a ``TypeError``. Clipping makes the
    engine apply the optimizer to whole gradients (the unfused path)."""
    own = _OWN.get(name, set())
    extra = sorted(k for k in kwargs if k not in _CLIP and (k not in _DEFAULTS or k in _OWN_ANY and k not in own))
    if extra:
        raise TypeError(f"{name}: unsupported arguments {extra}")
    for k, allowed in _DEFAULTS.items():
        if k in kwargs and allowed is not None and kwargs[k] not in allowed:
            hint = "; AdamW has decoupled weight decay" if k == "weight_decay" else ""
            raise NotImplementedError(f"{name}: {k}={kwargs[k]!r} is not supported by suanli yet (only {allowed[0]!r}){hint}")
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
    steps = kwargs.get("gradient_accumulation_steps")
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"{name}: gradient_accumulation_steps must be a whole number >= 1 or None; found {steps!r}")
        if steps > 1:
            out["gradient_accumulation_steps"] = steps
    return out


_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop}


def _schedule(value: Any) -> Any:
    """A learning rate as Keras serialises it: a number, or a schedule's
    ``{"class_name": ..., "config": {...}}``."""
    if isinstance(value, dict):
        cls = getattr(schedules, str(value.get("class_name")), None)
        if not (isinstance(cls, type) and issubclass(cls, schedules.LearningRateSchedule)):
            raise ValueError(f"optimizer: unknown learning rate schedule {value.get('class_name')!r}")
        return cls(**value.get("config", {}))
    return value


def get(identifier: Union[str, Dict[str, Any], Optimizer]) -> Optimizer:
    """An optimizer from its name (``"adam"``), a configuration dictionary as Keras
    serialises one (``{"class_name": "Adam", "config": {"learning_rate": 0.01}}``), or an
    optimizer object (returned as it is)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict) and identifier.get("class_name") == "LossScaleOptimizer":
        # Keras 3's serialised LossScaleOptimizer: its inner optimizer a name, a dict as
        # above, or the inner optimizer's own get_config() (named by "name").
        from ..mixed_precision import LossScaleOptimizer

        config = dict(identifier.get("config") or {})
        config.pop("name", None)
        inner = config.pop("inner_optimizer", None)
        if isinstance(inner, dict) and "class_name" not in inner and str(inner.get("name", "")).lower() in _BY_NAME:
            rest = {k: v for k, v in inner.items() if k != "name"}
            inner = {"class_name": inner["name"], "config": rest}
        return LossScaleOptimizer(get(inner), **config)
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    if isinstance(identifier, dict) and isinstance(identifier.get("class_name"), str) and identifier["class_name"].lower() in _BY_NAME:
        config = dict(identifier.get("config") or {})
        if "learning_rate" in config:
            config["learning_rate"] = _schedule(config["learning_rate"])
        return _BY_NAME[identifier["class_name"].lower()](**config)
    raise ValueError(
        f"optimizer: expected one of {sorted(_BY_NAME)}, a dict {{'class_name': ..., 'config': {{...}}}} "
        f"naming one, or an optimizer object; found {identifier!r}"
    )


def _from_file(path: str) -> Any:
    """The optimizer a model file was trained with (its training metadata), as an object;
    None for a file without one."""
    import json
    import struct

    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            meta = json.loads(f.read(n)).get("__metadata__", {})
        training = json.loads(meta["training"])
        (kind, c), = training["optimizer"].items()
    except (OSError, KeyError, ValueError, TypeError, struct.error):
        return None
    saved = training.get("clip") or {}
    clip = {k: saved.get(x) for k, x in zip(_CLIP, ("norm", "value", "global_norm")) if saved.get(x) is not None}
    if kind == "Sgd":
        return SGD(c["lr"], c.get("momentum", 0.0), c.get("nesterov", False), **clip)
    if kind == "Adam":
        return Adam(c["lr"], c["beta1"], c["beta2"], c["eps"], **clip)
    if kind == "AdamW":
        return AdamW(c["lr"], c["weight_decay"], c["beta1"], c["beta2"], c["eps"], **clip)
    if kind == "RmsProp":
        return RMSprop(c["lr"], c["rho"], c["eps"], **clip)
    return None


def __getattr__(name: str) -> Any:
    # Keras 3's keras.optimizers.LossScaleOptimizer (defined in mixed_precision, which
    # imports this module: resolved on first use).
    if name == "LossScaleOptimizer":
        from ..mixed_precision import LossScaleOptimizer

        return LossScaleOptimizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Adam", "AdamW", "LossScaleOptimizer", "Optimizer", "RMSprop", "SGD", "get", "schedules"]
