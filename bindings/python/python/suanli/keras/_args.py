"""The one checker of ``fit``/``evaluate``/``predict``'s arguments: what each must be, said
the way a NumPy or Keras user expects (``TypeError`` for a wrong kind of value, ``ValueError``
for a value out of range), before anything runs."""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np


def integer(op: str, name: str, value: Any, minimum: int, default: Optional[int] = None) -> Optional[int]:
    """An integer argument of at least ``minimum`` (``None`` gives ``default``). A float, a
    string or a bool is a ``TypeError``: ``epochs=2.7`` must not quietly train 2 epochs."""
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {name} must be an integer; found {value!r} ({type(value).__name__})")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{op}: {name} must be at least {minimum}; found {v}")
    return v


def fraction(op: str, name: str, value: Any) -> float:
    """A number in [0, 1)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a number in [0, 1); found {value!r} ({type(value).__name__})")
    v = float(value)
    if not 0.0 <= v < 1.0:
        raise ValueError(f"{op}: {name} must be in [0, 1); found {v}")
    return v


def flag(op: str, name: str, value: Any) -> bool:
    """A bool (NumPy's too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be True or False; found {value!r} ({type(value).__name__})")
    return bool(value)


def common(op: str, batch_size: Any = None, steps: Any = None) -> tuple:
    """``batch_size`` (32 when None) and ``steps`` (None allowed), as every entry point checks them."""
    return integer(op, "batch_size", batch_size, 1, 32), integer(op, "steps", steps, 1)
