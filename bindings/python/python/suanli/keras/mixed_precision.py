"""Keras's ``keras.mixed_precision``: the ``mixed_float16`` policy and ``LossScaleOptimizer``.

Under ``mixed_float16`` matmuls and convolutions take float16 operands with float32
accumulation; weights, optimizer state and everything else stay float32, and the loss is
scaled dynamically (``compile`` wraps the optimizer in a ``LossScaleOptimizer``, as Keras's
does). The policy applies to models created after it is set, as Keras's applies to layers
created after it. The loss scale lives on the device: ``dynamic_scale`` reads it (one read,
which waits for queued work). See docs/PYTHON.md and docs/ARCHITECTURE.md, "Mixed precision".
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Dict, Optional, Union

from . import optimizers as optimizers_module

_NAMES = ("float32", "mixed_float16")


class Policy:
    """A dtype policy: ``"float32"`` or ``"mixed_float16"`` (``"mixed_bfloat16"`` and other
    names are refused with a ValueError)."""

    def __init__(self, name: Union[str, "Policy"]) -> None:
        if isinstance(name, Policy):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(f"Policy: expected a policy name (a string); found {name!r}")
        if name == "mixed_bfloat16":
            raise ValueError("Policy: 'mixed_bfloat16' is not supported by suanli (bfloat16 kernels do not exist yet); use 'mixed_float16' or 'float32'")
        if name not in _NAMES:
            raise ValueError(f"Policy: expected one of {list(_NAMES)}; found {name!r}")
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        """What layers compute in: ``"float16"`` under ``mixed_float16``."""
        return "float16" if self._name == "mixed_float16" else "float32"

    @property
    def variable_dtype(self) -> str:
        """What weights are kept in: always ``"float32"``."""
        return "float32"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self._name}">'


# Keras 3's name for it.
DTypePolicy = Policy

_global = Policy("float32")


def set_global_policy(policy: Union[str, Policy, None]) -> None:
    """Sets the policy for models created from now on (``None``: back to ``"float32"``)."""
    global _global
    _global = Policy("float32" if policy is None else policy)


def global_policy() -> Policy:
    """The policy models created now get."""
    return _global


def _layer_dtype(cls: str, dtype: Any) -> Optional[str]:
    """Checks a layer's ``dtype=`` on its own (a known policy name, a Policy or None) and
    returns the policy name it asks for (None: the model's). Whether it fits the model's
    policy is checked when the layer joins a model (``_check_layer_policy``), as a Keras
    model's layers may differ from the global policy at their creation."""
    if dtype is None:
        return None
    name = dtype.name if isinstance(dtype, Policy) else dtype
    if name == "mixed_bfloat16":
        raise ValueError(f"{cls}: dtype 'mixed_bfloat16' is not supported by suanli; use 'mixed_float16' or 'float32'")
    if name not in _NAMES:
        raise ValueError(f"{cls}: dtype must be 'float32', 'mixed_float16', a Policy or None; found {dtype!r}")
    return name


# Layers whose products run in float16 under the mixed policy.
_FLOAT16_PRODUCTS = ("Dense", "Conv2D", "EinsumDense", "MultiHeadAttention", "Embedding")


def _check_layer_policy(cls: str, name: Optional[str], model_policy: str) -> None:
    """A layer's ``dtype=`` (``name``) against the policy of the model it is added to:
    its own policy's name (or None) anywhere; ``"float32"`` where the layer computes in
    float32 anyway (everything but the float16 matmuls of Dense and Conv2D); a per-layer
    float32 Dense or Conv2D under a mixed model is not supported yet."""
    if name is None or name == model_policy:
        return
    if cls in _FLOAT16_PRODUCTS:
        raise NotImplementedError(
            f"{cls}: dtype={name!r} in a model under the policy {model_policy!r}: per-layer policies are not supported "
            "yet for layers with float16 products; the model's policy applies to every Dense and Conv2D"
        )
    if name == "mixed_float16":
        raise NotImplementedError(
            f"{cls}: dtype='mixed_float16' in a model under the policy 'float32': per-layer policies are not supported yet; "
            "set_global_policy('mixed_float16') before creating the model"
        )
    # dtype="float32" on a layer that computes in float32 anyway (activations, softmax,
    # pooling, normalisation, dropout, reshaping): as asked.


class LossScaleOptimizer(optimizers_module.Optimizer):
    """Keras's ``LossScaleOptimizer``: the loss multiplied by a scale before the backward
    pass, the gradients divided by it before ``inner_optimizer`` applies them. Dynamic (the
    default): a step whose gradients overflow is skipped and halves the scale; the scale
    doubles after ``dynamic_growth_steps`` clean steps. All of it runs on the device.
    Differs from Keras in two points: a skipped step still counts in the optimizer's step
    number (Adam's bias correction, a schedule's step), and ``dynamic=False`` (which Keras 3
    refuses) is a fixed scale that never changes but still skips a step whose gradients are
    not finite (TF 2's fixed scale applied it)."""

    def __init__(self, inner_optimizer: Any, initial_scale: float = 2.0**15, dynamic_growth_steps: int = 2000, dynamic: bool = True, name: Optional[str] = None, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"LossScaleOptimizer: unsupported arguments {sorted(kwargs)}")
        inner = optimizers_module.get(inner_optimizer)
        if isinstance(inner, LossScaleOptimizer):
            raise ValueError("LossScaleOptimizer: the inner optimizer is already a LossScaleOptimizer")
        if isinstance(initial_scale, bool) or not isinstance(initial_scale, (int, float)) or not (0 < float(initial_scale) < 3.4e38 and math.isfinite(float(initial_scale))):
            raise ValueError(f"LossScaleOptimizer: initial_scale must be a finite number > 0 within float32; found {initial_scale!r}")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(dynamic_growth_steps, int) or not 1 <= dynamic_growth_steps < 2**32:
            raise ValueError(f"LossScaleOptimizer: dynamic_growth_steps must be a whole number >= 1; found {dynamic_growth_steps!r}")
        self.inner_optimizer = inner
        self._name = inner._name
        self._initial = float(initial_scale)
        self._growth = int(dynamic_growth_steps)
        self._dynamic = bool(dynamic)
        self._owner: Any = None
        # During fit the native model is busy: the scale logged at the last epoch's end (or
        # read when fit started) stands in for a device read.
        self._during_fit: Optional[float] = None
        self.name = name or "loss_scale_optimizer"

    @property
    def learning_rate(self) -> Any:
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self.inner_optimizer.learning_rate = value

    lr = learning_rate

    @property
    def initial_scale(self) -> float:
        return self._initial

    @property
    def dynamic_growth_steps(self) -> int:
        return self._growth

    @property
    def dynamic(self) -> bool:
        return self._dynamic

    def _state(self) -> Optional[tuple]:
        model = self._owner() if self._owner is not None else None
        native = getattr(model, "_native", None)
        return native.loss_scale_state() if native is not None else None

    def _busy(self) -> bool:
        model = self._owner() if self._owner is not None else None
        return bool(getattr(model, "_busy", False))

    @property
    def dynamic_scale(self) -> float:
        """The current scale, read from the device (the initial scale before training).
        During ``fit`` (from a callback) it is the scale of the last epoch's end
        (``logs["loss_scale"]``), or the scale when ``fit`` started."""
        if self._busy() and self._during_fit is not None:
            return self._during_fit
        state = self._state()
        return float(state[0]) if state is not None else self._initial

    # TF 2's name.
    loss_scale = dynamic_scale

    @property
    def skipped_steps(self) -> int:
        """Steps skipped so far because their gradients were not finite (not readable
        during ``fit``: the device is busy; ``logs["loss_scale"]`` has the scale)."""
        if self._busy():
            raise RuntimeError(
                "LossScaleOptimizer.skipped_steps: not readable during fit (the model is training); read it after fit, "
                "or the scale from logs['loss_scale'] / dynamic_scale in a callback"
            )
        state = self._state()
        return int(state[2]) if state is not None else 0

    def _lr_at(self, step: int) -> float:
        return self.inner_optimizer._lr_at(step)

    def exclude_from_weight_decay(self, var_list: Any = None, var_names: Any = None) -> None:
        self.inner_optimizer.exclude_from_weight_decay(var_list=var_list, var_names=var_names)

    def _native_args(self) -> Dict[str, Any]:
        mode = "dynamic" if self._dynamic else "fixed"
        return {**self.inner_optimizer._native_args(), "loss_scale": (mode, self._initial, self._growth)}

    def _bind(self, model: Any) -> None:
        self._owner = weakref.ref(model)

    def _fit_begins(self) -> None:
        """Called by ``fit`` before the native model gets busy."""
        state = self._state()
        self._during_fit = float(state[0]) if state is not None else self._initial

    def _epoch_logged(self, logs: Dict[str, float]) -> None:
        if "loss_scale" in logs:
            self._during_fit = float(logs["loss_scale"])

    def get_config(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "inner_optimizer": self.inner_optimizer.get_config(),
            "initial_scale": self._initial,
            "dynamic_growth_steps": self._growth,
            "dynamic": self._dynamic,
        }

    def __getattr__(self, name: str) -> Any:
        # Anything else is the inner optimizer's (its hyper-parameters), as Keras delegates.
        if name.startswith("__") or name == "inner_optimizer":
            raise AttributeError(name)
        return getattr(self.inner_optimizer, name)


def _from_checkpoint(inner: Any, path: str) -> LossScaleOptimizer:
    """The LossScaleOptimizer a checkpoint was trained with, around ``inner`` (its settings
    from the file's training metadata; Keras's defaults where the policy chose them)."""
    import json
    import struct

    settings: Any = None
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            meta = json.loads(f.read(n)).get("__metadata__", {})
        scaling = json.loads(meta["training"]).get("loss_scaling")
        settings = scaling.get("On") if isinstance(scaling, dict) else None
    except (OSError, KeyError, ValueError, TypeError, AttributeError, struct.error):
        settings = None
    if not isinstance(settings, dict):
        return LossScaleOptimizer(inner)
    return LossScaleOptimizer(
        inner,
        initial_scale=float(settings.get("initial", 2.0**15)),
        dynamic_growth_steps=int(settings.get("growth_steps", 2000)),
        dynamic=bool(settings.get("dynamic", True)),
    )


__all__ = ["DTypePolicy", "LossScaleOptimizer", "Policy", "global_policy", "set_global_policy"]
