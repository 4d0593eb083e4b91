"""``keras.Model(inputs, outputs)``: the functional API over the same engine as
``Sequential`` (a graph of layers: residual connections, merges such as ``layers.Add``)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _native
from .._device import _in_context, current_device
from . import layers as layers_module
from . import utils
from .layers import InputLayer, KerasTensor, Layer
from .models import Sequential

_SUBCLASSED = (
    "keras.Model: subclassed models (a class with its own call()) are not supported by suanli yet; "
    "build the network with keras.Model(inputs, outputs) (the functional API) or keras.Sequential"
)


class _Columns:
    """The arrays of a model of several inputs, in the model's input order, as ``fit``,
    ``evaluate`` and ``predict`` hand them to the engine: ``len`` is the number of samples
    and ``shape`` the first array's, so the code for one array takes it as it is."""

    def __init__(self, arrays: List[Any]) -> None:
        self._suanli_columns = arrays
        self.shape = np.shape(arrays[0])

    def __len__(self) -> int:
        return int(self.shape[0]) if self.shape else 0


def _tensors(value: Any, what: str) -> List[Any]:
    """The tensors of ``inputs=`` (a tensor, or a list or dict of them)."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, (list, tuple)):
        value = [value]
    if not value:
        raise ValueError(f"keras.Model: at least one {what} is required")
    for v in value:
        if not isinstance(v, KerasTensor):
            raise TypeError(f"keras.Model: {what}s must be symbolic tensors (keras.Input(...) and layer outputs); found {type(v).__name__}")
    return list(value)


def _one(value: Any, what: str) -> Any:
    """The single tensor of ``inputs=`` or ``outputs=`` (a tensor, or a list or dict of one)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"keras.Model: one {what} is supported (several are not yet); found {len(value)}")
        value = value[0]
    if not isinstance(value, KerasTensor):
        raise TypeError(f"keras.Model: {what} must be symbolic tensors (keras.Input(...) and layer outputs); found {type(value).__name__}")
    return value


class Model(Sequential):
    """``keras.Model(inputs, outputs, name=None)``: the layers between ``keras.Input(...)`` and
    an output tensor, trained like ``Sequential`` (``compile``, ``fit``, ``evaluate``,
    ``predict``, ``save``, ``summary`` with Keras's "Connected to" column). One or several
    inputs (``fit``/``evaluate``/``predict`` take their arrays as a list in ``inputs`` order or
    a dict keyed by the inputs' names; integer arrays are uploaded as integer ids) and one
    output for now; a layer object is called once (weights shared between calls are not
    supported yet). Subclassed models are refused with a message saying so."""

    def __init__(self, inputs: Any = None, outputs: Any = None, name: Optional[str] = None, **kwargs: Any) -> None:
        if inputs is None or outputs is None:
            raise NotImplementedError(_SUBCLASSED)
        if kwargs:
            raise TypeError(f"keras.Model: unsupported arguments {sorted(kwargs)}")
        super().__init__(name=name or "functional")
        ins = _tensors(inputs, "input")
        out = _one(outputs, "output")
        for k, inp in enumerate(ins):
            if not isinstance(inp, InputLayer):
                raise TypeError(f"keras.Model: inputs must come from keras.Input(...); found {inp!r} as input {k}")
            if any(inp is o for o in ins[:k]):
                raise ValueError(f"keras.Model: input {k} ({inp!r}) is given twice")
        position = {id(inp): k for k, inp in enumerate(ins)}
        read = [False] * len(ins)
        if out._layer is None:
            raise ValueError("keras.Model: the output is the input itself; call at least one layer on it")
        # Depth-first from the output: each layer after what it reads.
        index: Dict[int, int] = {}
        order: List[Layer] = []
        reads: List[List[int]] = []
        stack: List[Tuple[KerasTensor, int]] = [(out, 0)]
        while stack:
            t, nxt = stack.pop()
            if t._layer is None:
                if id(t) not in position:
                    raise ValueError(
                        f"keras.Model: a layer reads an input that is not the model's ({t!r}, "
                        f"name {getattr(t, '_given_name', None)!r}); the output must depend on the given inputs only"
                    )
                read[position[id(t)]] = True
                continue
            if id(t) in index:
                continue
            if nxt < len(t._inbound):
                stack.append((t, nxt + 1))
                src = t._inbound[nxt]
                if id(src) not in index:
                    stack.append((src, 0))
                continue
            reads.append([-1 - position[id(s)] if s._layer is None else index[id(s)] for s in t._inbound])
            index[id(t)] = len(order)
            order.append(t._layer)
        if not all(read):
            k = read.index(False)
            raise ValueError(f"keras.Model: input {k} ({ins[k]!r}) is not read by any layer the output depends on")
        self._input = ins[0]
        self.layers = order
        self._reads = reads
        self.inputs = ins
        self.outputs = [out]

    def add(self, layer: Any) -> None:
        raise TypeError("keras.Model: add is for Sequential; a functional model is made of the layers between its inputs and outputs")

    def _build(self, sample_shape: Optional[Sequence[int]] = None) -> Any:
        if self._native is not None:
            return self._native
        dev = _in_context() or self._device_hint or current_device()
        native = _native.Model(dev, seed=utils.seed(), input_shape=list(self._input.input_shape))
        native.set_names(model=self.name, input=self._input._given_name)
        for k, inp in enumerate(self.inputs[1:], start=1):
            native.add_input(list(inp.input_shape), inp._given_name or f"input_layer_{k}")
        for layer, reads in zip(self.layers, self._reads):
            spec = layer._spec()
            spec["config"].pop("input_shape", None)
            native.add_node(json.dumps(spec), reads)
        self._native = native
        self._bind_layers()
        self._compile_native(native)
        return native

    # ---- inputs as a list or a dict keyed by the input's name ---------------------------
    def _input_name(self) -> str:
        return self._input._given_name or self._build().input_name()

    def _unwrap(self, x: Any, what: str) -> Any:
        if len(self.inputs) > 1:
            return self._columns(x, what)
        if isinstance(x, dict):
            name = self._input_name()
            if set(x) != {name}:
                raise ValueError(f"{what}: expected a dict keyed by the model's input name {name!r}; found keys {sorted(x)}")
            return x[name]
        if isinstance(x, (list, tuple)) and len(x) == 1 and np.ndim(x[0]) >= 1 and not np.isscalar(x[0]):
            return x[0]
        return x

    def _columns(self, x: Any, what: str) -> _Columns:
        """The arrays of a model of several inputs, from a list in ``inputs`` order or a dict
        keyed by the inputs' names (Keras's two forms)."""
        names = list(self._build().input_names())
        if isinstance(x, dict):
            if set(x) != set(names):
                raise ValueError(f"{what}: expected a dict keyed by the model's input names {names}; found keys {sorted(x)}")
            arrays = [x[n] for n in names]
        elif isinstance(x, (list, tuple)) and len(x) == len(names):
            arrays = list(x)
        else:
            found = f"a list of {len(x)}" if isinstance(x, (list, tuple)) else type(x).__name__
            raise ValueError(f"{what}: the model has {len(names)} inputs {names}; give a list of {len(names)} arrays or a dict keyed by those names; found {found}")
        arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in arrays]
        rows = {len(a) if np.ndim(a) else -1 for a in arrays}
        if len(rows) != 1:
            raise ValueError(f"{what}: every input needs the same number of samples; found {[np.shape(a) for a in arrays]}")
        return _Columns(arrays)

    def fit(self, x: Any = None, y: Any = None, *args: Any, **kwargs: Any):
        vd = kwargs.get("validation_data")
        if isinstance(vd, (list, tuple)) and len(vd) >= 2:
            kwargs["validation_data"] = (self._unwrap(vd[0], "fit validation_data"), *vd[1:])
        return super().fit(self._unwrap(x, "fit"), y, *args, **kwargs)

    def evaluate(self, x: Any = None, y: Any = None, *args: Any, **kwargs: Any):
        return super().evaluate(self._unwrap(x, "evaluate"), y, *args, **kwargs)

    def predict(self, x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        return super().predict(self._unwrap(x, "predict"), *args, **kwargs)

    def __repr__(self) -> str:
        return f"<Model {self.name!r}: {len(self.layers)} layers>"


def from_native(native: Any) -> Model:
    """The Python model of a loaded graph model."""
    specs = [json.loads(s) for s in native.layer_specs()]
    m = Model.__new__(Model)
    Sequential.__init__(m, name=None)
    ins = [InputLayer(shape=tuple(s), name=n) for s, n in zip(native.input_shapes(), native.input_names())]
    inp = ins[0]
    m._input = inp
    m.layers = [layers_module.from_spec(s) for s in specs]
    m._reads = native.graph()
    m.name = "functional"
    m.inputs = ins
    m.outputs = []
    m._native = native
    m._bind_layers()
    return m


__all__ = ["Model"]
