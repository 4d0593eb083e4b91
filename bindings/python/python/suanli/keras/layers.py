"""Layers, as ``keras.layers`` names them: ``Dense``, ``Conv2D``, ``MaxPooling2D``,
``AveragePooling2D``, ``GlobalAveragePooling2D``, ``BatchNormalization``, ``Flatten``,
``Reshape``, ``Dropout``, and ``Input`` (``InputLayer``).

The layer classes are not written here: they are made from suanli's one layer vocabulary
(``suanli._native.layer_classes()``, Rust's ``nn::registry``), which also checks every
argument. A layer object holds Keras's JSON form of its configuration; the model sends it to
the engine as it is, and the model file stores it the same way. So a layer type added to the
Rust crate appears here with its Keras argument names and defaults, and an argument that is
wrong is reported in the same words from Python and from Rust.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _native


def _jsonable(name: str, value: Any) -> Any:
    """An argument as the engine reads it: tuples as lists, activations by name (a function
    such as ``tf.nn.relu`` or ``keras.activations.relu`` by its ``__name__``)."""
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    if isinstance(value, tuple):
        return [_jsonable(name, v) for v in value]
    if isinstance(value, list):
        return [_jsonable(name, v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # NumPy scalars
        return value.item()
    return value


def _shape(value: Any, what: str) -> List[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    try:
        shape = [int(d) for d in value]
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a shape such as (28, 28, 1); found {value!r}") from None
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"{what}: expected a shape of sizes of at least 1; found {tuple(value)!r}")
    return shape


class Layer:
    """Base of the layers a ``Sequential`` holds: a class name and Keras's configuration."""

    class_name: str = ""
    _positional: Tuple[str, ...] = ()

    def __init__(self, *args: Any, name: Optional[str] = None, input_shape: Any = None, input_dim: Any = None, trainable: bool = True, **kwargs: Any) -> None:
        cls = type(self).__name__
        if len(args) > len(self._positional):
            raise TypeError(f"{cls}: takes at most {len(self._positional)} positional arguments ({', '.join(self._positional)}); got {len(args)}")
        if input_dim is not None and "input_dim" in self._positional:
            # Embedding's input_dim is its vocabulary size, an argument of its own (not the
            # first layer's input_dim=, which Keras's Dense takes for an input shape).
            kwargs["input_dim"], input_dim = input_dim, None
        config: Dict[str, Any] = {}
        for key, value in zip(self._positional, args):
            config[key] = value
        for key, value in kwargs.items():
            if key in config:
                raise TypeError(f"{cls}: got multiple values for argument {key!r}")
            config[key] = value
        # The policy asked by ``dtype=`` (None: the model's), checked against the model's
        # when the layer joins one.
        self._dtype_name = _unsupported(cls, config)
        tied = config.get("tied_to")
        if isinstance(tied, Layer):
            # Dense(tied_to=embedding): that layer's matrix, named when the model is built.
            self._tied = tied
            config["tied_to"] = tied.name or "(a layer named when its model is built)"
        if input_dim is not None:
            input_shape = (input_dim,)
        self.input_shape = None if input_shape is None else tuple(_shape(input_shape, f"{cls} input_shape"))
        self.name = name
        self._trainable = bool(trainable)
        self._config = {k: _jsonable(k, v) for k, v in config.items()}
        # Checked now, as Keras checks at construction (the model checks the shapes later).
        checked = json.loads(_native.check_layer(json.dumps(self._spec())))
        self._defaults = checked.get("config", {})

    def _spec(self) -> Dict[str, Any]:
        config = dict(self._config)
        if self.name is not None:
            config["name"] = self.name
        if self.input_shape is not None:
            config["input_shape"] = list(self.input_shape)
        if not self.trainable:
            config["trainable"] = False
        return {"class_name": self.class_name, "config": config}

    @property
    def trainable(self) -> bool:
        """Keras's ``trainable``: False freezes the layer's weights for every later ``fit``
        (gradients still flow through it); the summary counts them as non-trainable."""
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        owner = self.__dict__.get("_owner")
        if owner is not None and owner._native is not None:
            owner._native.set_trainable(self._index, self._trainable)

    def get_weights(self) -> List[Any]:
        """The layer's weights as float32 arrays, in Keras's order and layouts (empty before
        its model is built)."""
        owner = self.__dict__.get("_owner")
        return [] if owner is None else owner._layer_weights(self.name)

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Overwrites the layer's weights in place (shapes checked)."""
        owner = self.__dict__.get("_owner")
        if owner is None:
            raise ValueError(f"{type(self).__name__}.set_weights: the layer is not built yet (build its model first)")
        owner._set_layer_weights(self.name, weights)

    def get_config(self) -> Dict[str, Any]:
        """Keras's configuration: every argument, with its default when not given."""
        config = dict(self._defaults)
        config.pop("batch_input_shape", None)
        if self.name is not None:
            config["name"] = self.name
        return config

    def __getattr__(self, key: str) -> Any:
        # The arguments read as attributes (layer.units, layer.filters), as in Keras.
        defaults = self.__dict__.get("_defaults")
        if defaults is not None and key in defaults:
            v = defaults[key]
            return tuple(v) if isinstance(v, list) else v
        raise AttributeError(f"{type(self).__name__!s} has no attribute {key!r}")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._config.items())
        return f"{type(self).__name__}({args})"


# Keras arguments no suanli layer has yet: accepted at their defaults (dropped), refused
# otherwise with a NotImplementedError saying so.
_ABSENT = {
    "kernel_regularizer": None,
    "bias_regularizer": None,
    "activity_regularizer": None,
    "beta_regularizer": None,
    "gamma_regularizer": None,
    "kernel_constraint": None,
    "bias_constraint": None,
    "beta_constraint": None,
    "gamma_constraint": None,
    "lora_rank": None,
}


def _unsupported(cls: str, config: Dict[str, Any]) -> Optional[str]:
    """Refuses Keras arguments suanli lacks; returns the policy name ``dtype=`` asked for."""
    dtype_name = None
    if "dtype" in config:
        from . import mixed_precision

        dtype_name = mixed_precision._layer_dtype(cls, config.pop("dtype"))
    for key, default in _ABSENT.items():
        if key not in config:
            continue
        value = config.pop(key)
        if value is None or value == default:
            continue
        raise NotImplementedError(f"{cls}: {key}={value!r} is not supported by suanli yet: layers have no regularizers, constraints or LoRA (pass None)")
    return dtype_name


def _tie(layer: Layer, spec: Dict[str, Any], native: Any, index_of: Dict[int, int]) -> None:
    """A ``Dense(tied_to=owner)`` given the layer object: the name its owner got in the
    model being built (``index_of``: each layer object's first native entry)."""
    owner = layer.__dict__.get("_tied")
    if owner is None:
        return
    j = index_of.get(id(owner))
    if j is None:
        raise ValueError(
            f"{type(layer).__name__}(tied_to={type(owner).__name__}): expected the layer whose matrix it uses "
            "to come before it in the model (called first, on the way to it); found it after, or not in the model"
        )
    name = json.loads(native.layer_specs()[j])["config"]["name"]
    spec["config"]["tied_to"] = layer._config["tied_to"] = layer._defaults["tied_to"] = name


def _make(class_name: str, positional: Sequence[str]) -> type:
    doc = (
        f"Keras's ``{class_name}``, from suanli's layer vocabulary. Positional arguments: "
        f"{', '.join(positional) or 'none'}; every other Keras argument by name. "
        "``name=``, ``input_shape=`` (first layer) as Keras."
    )
    return type(class_name, (Layer,), {"class_name": class_name, "_positional": tuple(positional), "__doc__": doc, "__module__": __name__})


for _name, _positional in _native.layer_classes():
    globals()[_name] = _make(_name, _positional)


def _adapt(self: Layer, data: Any, batch_size: Any = None, steps: Any = None) -> None:
    """Keras's ``adapt``: sets the mean and variance of each feature (the last axis) to those
    of ``data`` (an array or Tensor), computed on the current device in float32, as Keras
    computes them. Before the model is built they go into the layer's configuration; after,
    into the built model's weights as well."""
    from .._ops import convert_to_tensor

    t = convert_to_tensor(data)
    shape = tuple(t.shape)
    if len(shape) < 1 or t.size == 0:
        raise ValueError(f"Normalization.adapt: expected data with at least one value; found shape {shape}")
    c = shape[-1]
    x = t.reshape([t.size // c, c])
    mean = x.mean(0)
    centred = x + mean * -1.0
    var = (centred * centred).mean(0)
    m = [float(v) for v in mean.numpy()]
    v = [float(v) for v in var.numpy()]
    self._config["mean"], self._config["variance"] = m, v
    checked = json.loads(_native.check_layer(json.dumps(self._spec())))
    self._defaults = checked.get("config", {})
    owner = self.__dict__.get("_owner")
    if owner is not None:
        import numpy as np

        owner._set_layer_weights(self.name, [np.asarray(m, np.float32), np.asarray(v, np.float32)])


globals()["Normalization"].adapt = _adapt
__all__ = [n for n, _ in _native.layer_classes()] + ["Input", "InputLayer", "KerasTensor", "Layer"]


def from_spec(spec: Dict[str, Any]) -> Layer:
    """The layer object of a spec in Keras's JSON form (a loaded model's layers)."""
    config = dict(spec.get("config", {}))
    name = config.pop("name", None)
    shape = config.pop("batch_input_shape", None)
    given = config.pop("input_shape", None)
    cls = globals().get(spec.get("class_name", ""))
    if not (isinstance(cls, type) and issubclass(cls, Layer)):
        raise ValueError(f"unknown layer class {spec.get('class_name')!r}")
    return cls(name=name, input_shape=given if shape is None else shape[1:], **config)


class KerasTensor:
    """A symbolic tensor of the functional API: ``keras.Input``'s, or what calling a layer on
    symbolic tensors gives. It knows its shape (``(None, ...)``) and how it was made; a
    ``keras.Model(inputs, outputs)`` is the graph between them."""

    def __init__(self, shape: Sequence[int], layer: Optional["Layer"] = None, inbound: Sequence["KerasTensor"] = ()) -> None:
        self._sample_shape = tuple(int(d) for d in shape)
        self._layer = layer
        self._inbound = tuple(inbound)
        # The static batch size of keras.Input(batch_size=...), carried to what follows.
        self._batch: Optional[int] = self._inbound[0]._batch if self._inbound else None

    @property
    def shape(self) -> Tuple[Optional[int], ...]:
        return (self._batch, *self._sample_shape)

    def __repr__(self) -> str:
        made = "Input" if self._layer is None else type(self._layer).__name__
        return f"<KerasTensor shape={self.shape} from {made}>"


class InputLayer(KerasTensor):
    """Declares the per-sample input shape, as ``keras.Input(shape=(28, 28, 1))``: the first
    element of a ``Sequential``, or the input tensor of a functional ``keras.Model``. A
    ``batch_size`` (or ``batch_shape``) shows in ``shape``, as Keras's; suanli's models take
    any batch size all the same."""

    def __init__(self, shape: Any = None, batch_size: Any = None, dtype: Any = None, sparse: Any = None, batch_shape: Any = None, input_tensor: Any = None, optional: bool = False, name: Optional[str] = None, input_shape: Any = None, ragged: Any = None) -> None:
        if sparse or ragged or input_tensor is not None or optional:
            raise NotImplementedError("Input: sparse, ragged, optional inputs and wrapping an existing tensor are not supported by suanli; give shape= (and batch_size=)")
        if dtype not in (None, "float32", "int32", "int64", "uint8", "uint32"):
            raise ValueError(f"Input: dtype must be float32 or an integer type (ids: integer arrays are uploaded as integers); found {dtype!r}")
        self.dtype = str(dtype or "float32")
        given = shape if shape is not None else input_shape
        if batch_shape is not None:
            if given is not None or batch_size is not None:
                raise ValueError("Input: give batch_shape, or shape (and batch_size), not both")
            batch_shape = tuple(batch_shape)
            if not batch_shape:
                raise ValueError("Input: batch_shape must include the batch size, e.g. (32, 28, 28, 1)")
            batch_size, given = batch_shape[0], batch_shape[1:]
        if given is None:
            raise ValueError("Input: a shape such as (28, 28, 1) is required")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"Input: batch_size must be a whole number of at least 1 or None; found {batch_size!r}")
        self.input_shape = tuple(_shape(given, "Input shape"))
        super().__init__(self.input_shape)
        self._batch = self.batch_size = batch_size
        self._given_name = name
        self.name = name or "input"

    def __repr__(self) -> str:
        return f"Input(shape={self.input_shape})"


def _attention_call(self: Layer, query: Any, value: Any = None, key: Any = None, attention_mask: Any = None, return_attention_scores: bool = False, training: Any = None, use_causal_mask: bool = False) -> Tuple[Any, tuple, dict]:
    """Keras's ``MultiHeadAttention.__call__(query, value, key=None, attention_mask=None,
    return_attention_scores=False, training=None, use_causal_mask=False)``: the node's inputs
    are the query (alone for self-attention, ``mha(x, x)``), then the value and the key when
    they differ from it, then the mask (0/1 of shape (batch, T_query, T_key); zeros hide a
    key). The call arguments go into the layer's configuration, which a node of suanli's
    graph is."""
    if value is None:
        raise TypeError("MultiHeadAttention: call it as mha(query, value), e.g. mha(x, x) for self-attention")
    if return_attention_scores:
        raise NotImplementedError("MultiHeadAttention: return_attention_scores is not supported by suanli yet")
    xs = [query]
    if value is not query or (key is not None and key is not query):
        xs.append(value)
        if key is not None and key is not value:
            xs.append(key)
    if attention_mask is not None:
        xs.append(attention_mask)
    flags = {"use_causal_mask": bool(use_causal_mask), "attention_mask": attention_mask is not None}
    if self.__dict__.get("_first_input") is not None:
        for name, on in flags.items():
            if bool(self._config.get(name, False)) != on:
                raise ValueError(f"MultiHeadAttention: a layer called again must use the same {name} (given or not)")
    self._config.update(flags)
    checked = json.loads(_native.check_layer(json.dumps(self._spec())))
    self._defaults = checked.get("config", {})
    return xs, (), {}


def _call(self: Layer, inputs: Any, *args: Any, **kwargs: Any) -> KerasTensor:
    """Calling a layer on symbolic tensors (the functional API): its output tensor, with its
    shape inferred now, so a shape that does not fit fails here, as in Keras. Calling the
    same layer object again is another call of one layer with one set of weights (Keras's
    shared layer)."""
    cls = type(self).__name__
    if self.class_name == "MultiHeadAttention":
        inputs, args, kwargs = _attention_call(self, inputs, *args, **kwargs)
    xs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if not xs or not all(isinstance(x, KerasTensor) for x in xs):
        raise TypeError(
            f"{cls}: call a layer on keras.Input(...) or on another layer's output (the functional API); "
            f"found {type(inputs).__name__}. To compute on arrays, build a model and use predict"
        )
    if args or kwargs:
        raise TypeError(f"{cls}: calling a layer with arguments beyond its inputs ({sorted(kwargs) or len(args)}) is not supported")
    spec = self._spec()
    spec["config"].pop("input_shape", None)
    shapes = [list(x._sample_shape) for x in xs]
    shape = _native.layer_output_shape(json.dumps(spec), shapes)
    # Calling the layer object again shares its weights (Keras's shared layer): this call's
    # input must give them the shapes the first call's gave.
    first = self.__dict__.get("_first_input")
    if first is None:
        self._first_input = shapes
    elif first != shapes:
        had = _native.layer_weight_shapes(json.dumps(spec), first)
        want = _native.layer_weight_shapes(json.dumps(spec), shapes)
        if had != want:
            def text(ss: list) -> str:
                shown = ", ".join(str((None, *s)) for s in ss)
                return f"an input of shape {shown}" if len(ss) == 1 else f"inputs of shapes {shown}"
            raise ValueError(
                f"{cls}: this layer was first called on {text(first)} (weights "
                f"{[tuple(w) for w in had]}); calling it again shares those weights, so "
                f"{text(shapes)} (weights {[tuple(w) for w in want]}) does not fit"
            )
    return KerasTensor(shape, self, xs)


Layer.__call__ = _call


def Input(shape: Any = None, batch_size: Any = None, dtype: Any = None, sparse: Any = None, batch_shape: Any = None, name: Optional[str] = None, tensor: Any = None, ragged: Any = None, optional: bool = False) -> InputLayer:  # noqa: N802 (Keras's name)
    """``keras.Input(shape=...)``: the first element of a ``Sequential``, or a functional
    model's input; any rank, channels last for images, float32."""
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse, batch_shape=batch_shape, input_tensor=tensor, optional=optional, name=name, ragged=ragged)
