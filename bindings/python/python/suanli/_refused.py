"""Names TensorFlow programs use that suanli cannot support yet: each exists, and using it
raises ``NotImplementedError`` naming what to use instead (never ``AttributeError``, which
reads as a typo or a broken install)."""

from __future__ import annotations

from types import ModuleType
from typing import Any


class _Refused:
    """A callable stand-in: calling it (or, for a module, reaching into it) raises."""

    def __init__(self, name: str, instead: str) -> None:
        self._name = name
        self._instead = instead

    def _raise(self) -> None:
        raise NotImplementedError(f"{self._name} is not supported by suanli yet; {self._instead}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._raise()

    def __repr__(self) -> str:
        return f"<{self._name}: not supported yet>"


class _RefusedModule(ModuleType):
    """A module stand-in (``tf.data``): any attribute raises."""

    def __init__(self, name: str, instead: str) -> None:
        super().__init__(name)
        self._instead = instead

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        raise NotImplementedError(f"{self.__name__}.{key} is not supported by suanli yet; {self._instead}")


def refused_class(name: str, instead: str) -> type:
    """A class that can be named and subclassed (``class M(keras.Model)``) but not made."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"{name} is not supported by suanli yet; {instead}")

    return type(name.rsplit(".", 1)[-1], (), {"__init__": __init__, "__doc__": f"Not supported yet: {instead}"})


GradientTape = refused_class("tf.GradientTape", "train with model.fit (a model is a graph of layers, Sequential or the functional API, each with its backward pass)")
function = _Refused("tf.function", "suanli runs every step as a captured program on the device already: call the function directly")
data = _RefusedModule("tf.data", "pass NumPy arrays, or a keras.utils.PyDataset or a generator of (x, y) batches, to fit")
