"""Learning-rate schedules, as ``keras.optimizers.schedules``: objects called with the
optimizer's step count (Keras's ``optimizer.iterations``, the steps taken before this one)
that give that step's learning rate. Pass one as an optimizer's ``learning_rate``; ``fit``
asks it for every step's rate when the step's uniforms are written, and the device reads the
rate from the step's entry of the parameter table (no recompilation). Any callable of the
step works the same way."""

from __future__ import annotations

import math
from typing import Any, Dict, Sequence


class LearningRateSchedule:
    """Base class: ``__call__(step) -> float``."""

    def __call__(self, step: int) -> float:
        raise NotImplementedError

    def get_config(self) -> Dict[str, Any]:
        return dict(self.__dict__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"


def _positive(name: str, value: Any) -> float:
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name}: expected a finite number > 0; found {value!r}")
    return v


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (the exponent floored
    with ``staircase``)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False, name: str = "ExponentialDecay") -> None:
        self.initial_learning_rate = _positive("initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive("decay_steps", decay_steps)
        self.decay_rate = _positive("decay_rate", decay_rate)
        self.staircase = bool(staircase)
        self.name = name

    def __call__(self, step: int) -> float:
        p = step / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return self.initial_learning_rate * self.decay_rate ** p


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (the ratio floored
    with ``staircase``)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False, name: str = "InverseTimeDecay") -> None:
        self.initial_learning_rate = _positive("initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive("decay_steps", decay_steps)
        self.decay_rate = float(decay_rate)
        if not (self.decay_rate >= 0 and math.isfinite(self.decay_rate)):
            raise ValueError(f"decay_rate: expected a finite number >= 0; found {decay_rate!r}")
        self.staircase = bool(staircase)
        self.name = name

    def __call__(self, step: int) -> float:
        p = step / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return self.initial_learning_rate / (1 + self.decay_rate * p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[1]`` while ``step <=
    boundaries[1]``, ..., ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries: Sequence[int], values: Sequence[float], name: str = "PiecewiseConstant") -> None:
        self.boundaries = [int(b) for b in boundaries]
        self.values = [_positive("values", v) for v in values]
        if len(self.values) != len(self.boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: expected one more value than boundaries; found {len(self.boundaries)} boundaries and {len(self.values)} values")
        if any(a >= b for a, b in zip(self.boundaries, self.boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase; found {self.boundaries}")
        self.name = name

    def __call__(self, step: int) -> float:
        for b, v in zip(self.boundaries, self.values):
            if step <= b:
                return v
        return self.values[-1]


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial_learning_rate`` (or, after ``warmup_steps`` of linear
    warm-up, from ``warmup_target``) to ``alpha`` times it over ``decay_steps``."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0, name: str = "CosineDecay", warmup_target: Any = None, warmup_steps: int = 0) -> None:
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive("decay_steps", decay_steps)
        self.alpha = float(alpha)
        self.warmup_target = None if warmup_target is None else _positive("warmup_target", warmup_target)
        self.warmup_steps = int(warmup_steps)
        self.name = name

    def __call__(self, step: int) -> float:
        start = self.initial_learning_rate
        if self.warmup_target is not None and self.warmup_steps > 0:
            if step < self.warmup_steps:
                return start + (self.warmup_target - start) * step / self.warmup_steps
            start = self.warmup_target
            step -= self.warmup_steps
        t = min(step, self.decay_steps) / self.decay_steps
        return start * ((1 - self.alpha) * 0.5 * (1 + math.cos(math.pi * t)) + self.alpha)


__all__ = ["CosineDecay", "ExponentialDecay", "InverseTimeDecay", "LearningRateSchedule", "PiecewiseConstantDecay"]
