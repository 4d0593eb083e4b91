"""Layers: ``Dense``, ``Dropout`` and ``Input`` (``InputLayer``)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

_ACTIVATIONS = {
    None: "linear",
    "linear": "linear",
    "relu": "relu",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "softmax": "softmax",
    "gelu": "gelu",
    "leaky_relu": "leaky_relu",
}


def _activation_name(activation: Any) -> str:
    if callable(activation) and hasattr(activation, "__name__"):
        activation = activation.__name__
    if isinstance(activation, str):
        activation = activation.lower()
    try:
        return _ACTIVATIONS[activation]
    except (KeyError, TypeError):
        raise ValueError(
            f"activation: expected one of {sorted(k for k in _ACTIVATIONS if k)} or None; found {activation!r}"
        ) from None


def _features(shape: Optional[Sequence[int]], what: str) -> Optional[int]:
    if shape is None:
        return None
    shape = tuple(shape)
    if len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 1:
        raise ValueError(
            f"{what}: expected a 1-D feature shape such as (784,); found {shape!r} "
            "(flatten the samples first: x.reshape(len(x), -1))"
        )
    return shape[0]


class Layer:
    """Base of the layers a ``Sequential`` holds."""

    name: str


class Dense(Layer):
    """A fully connected layer: ``activation(x @ kernel + bias)``.

    ``kernel_initializer`` is ``"glorot_uniform"`` (Keras's default), ``"he_normal"`` or
    ``"he_uniform"``; biases start at zero.
    """

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: str = "glorot_uniform",
        bias_initializer: str = "zeros",
        input_shape: Optional[Sequence[int]] = None,
        input_dim: Optional[int] = None,
        name: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"Dense: unsupported arguments {sorted(kwargs)}")
        if not isinstance(units, int) or isinstance(units, bool) or units < 1:
            raise ValueError(f"Dense: units must be a positive integer; found {units!r}")
        if bias_initializer != "zeros":
            raise ValueError(f"Dense: bias_initializer must be 'zeros'; found {bias_initializer!r}")
        self.units = units
        self.activation = _activation_name(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        dim = _features(input_shape, "Dense input_shape")
        if input_dim is not None:
            dim = input_dim
        self.input_dim = dim
        self.name = name or "dense"

    def __repr__(self) -> str:
        return f"Dense({self.units}, activation={self.activation!r})"


class Dropout(Layer):
    """Sets a fraction ``rate`` of the previous layer's outputs to zero while training (and
    scales the rest by 1/(1-rate)); does nothing at inference. It must follow a ``Dense``."""

    def __init__(self, rate: float, name: Optional[str] = None, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"Dropout: unsupported arguments {sorted(kwargs)}")
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1); found {rate!r}")
        self.rate = float(rate)
        self.name = name or "dropout"

    def __repr__(self) -> str:
        return f"Dropout({self.rate})"


class InputLayer(Layer):
    """Declares the input features, as ``keras.Input(shape=(784,))``."""

    def __init__(self, shape: Optional[Sequence[int]] = None, input_shape: Optional[Sequence[int]] = None, name: Optional[str] = None) -> None:
        self.input_dim = _features(shape if shape is not None else input_shape, "Input shape")
        if self.input_dim is None:
            raise ValueError("Input: a shape such as (784,) is required")
        self.name = name or "input"


def Input(shape: Sequence[int], name: Optional[str] = None, **kwargs: Any) -> InputLayer:  # noqa: N802 (Keras's name)
    """``keras.Input(shape=(features,))``: the first element of a ``Sequential``."""
    if kwargs:
        raise TypeError(f"Input: unsupported arguments {sorted(kwargs)}")
    return InputLayer(shape=shape, name=name)
