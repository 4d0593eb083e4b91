"""``keras.Model(inputs, outputs)``: the functional API over the same engine as
``Sequential`` (a graph of layers: residual connections, merges such as ``layers.Add``)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _native
from .._device import _in_context, current_device
from . import layers as layers_module
from . import losses as losses_module
from . import metrics as metrics_module
from . import utils
from .layers import InputLayer, KerasTensor, Layer
from .models import Sequential, _check_policy

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


class Model(Sequential):
    # Several outputs' metrics, set by compile: each key as asked and the engine's logs key
    # it reads, and the engine's metrics per output (None: one list for the model).
    _output_sources: Optional[Dict[str, str]] = None
    _output_engine_metrics: Optional[List[List[Tuple[str, float]]]] = None

    """``keras.Model(inputs, outputs, name=None)``: the layers between ``keras.Input(...)`` and
    an output tensor, trained like ``Sequential`` (``compile``, ``fit``, ``evaluate``,
    ``predict``, ``save``, ``summary`` with Keras's "Connected to" column). One or several
    inputs (``fit``/``evaluate``/``predict`` take their arrays as a list in ``inputs`` order or
    a dict keyed by the inputs' names; integer arrays are uploaded as integer ids) and one or
    several outputs (a loss, a weight and metrics per output). A layer object called several
    times is one layer with one set of weights (Keras's shared layer): each call is a node of
    the graph, ``layers`` lists the object once, and training sums every call's gradient.
    Subclassed models are refused with a message saying so."""

    def __init__(self, inputs: Any = None, outputs: Any = None, name: Optional[str] = None, **kwargs: Any) -> None:
        if inputs is None or outputs is None:
            raise NotImplementedError(_SUBCLASSED)
        if kwargs:
            raise TypeError(f"keras.Model: unsupported arguments {sorted(kwargs)}")
        super().__init__(name=name or "functional")
        ins = _tensors(inputs, "input")
        # Outputs as a dict: its keys name them (for losses, weights and targets given as
        # dicts), in the dict's order.
        self._output_keys: Optional[List[str]] = list(outputs) if isinstance(outputs, dict) else None
        outs = _tensors(outputs, "output")
        for k, inp in enumerate(ins):
            if not isinstance(inp, InputLayer):
                raise TypeError(f"keras.Model: inputs must come from keras.Input(...); found {inp!r} as input {k}")
            if any(inp is o for o in ins[:k]):
                raise ValueError(f"keras.Model: input {k} ({inp!r}) is given twice")
        position = {id(inp): k for k, inp in enumerate(ins)}
        read = [False] * len(ins)
        for k, out in enumerate(outs):
            if out._layer is None:
                raise ValueError("keras.Model: an output is an input itself; call at least one layer on it")
            if any(out is o for o in outs[:k]):
                raise ValueError(f"keras.Model: output {k} ({out!r}) is given twice")
        # Depth-first from each output: each call of a layer (a node) after what it reads.
        index: Dict[int, int] = {}
        order: List[Layer] = []
        reads: List[List[int]] = []
        stack: List[Tuple[KerasTensor, int]] = []
        for out in reversed(outs):
            stack.append((out, 0))
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
        self._set_calls(order)
        for layer in self.layers:
            _check_policy(self, layer)
        self._reads = reads
        self.inputs = ins
        self.outputs = outs
        self._output_index = [index[id(o)] for o in outs]

    def _set_calls(self, calls: List[Layer]) -> None:
        """The layer of each node (native entry) in order; ``layers`` lists each layer object
        once, at its first call, as Keras's ``model.layers``."""
        self._calls = calls
        self.layers = []
        for layer in calls:
            if not any(layer is l for l in self.layers):
                self.layers.append(layer)

    def _bind_layers(self) -> None:
        """Each layer object gets its name in the built model and the index of its first
        call (the native entry its weights and ``trainable`` go through)."""
        specs = [json.loads(s) for s in self._native.layer_specs()]
        seen: set = set()
        for j, layer in enumerate(self._calls):
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            layer.name = specs[j]["config"].get("name", layer.name)
            layer._owner = self
            layer._index = j

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
        first: Dict[int, int] = {}
        for j, (layer, reads) in enumerate(zip(self._calls, self._reads)):
            if id(layer) in first:
                # Another call of a layer object: its first call's weights.
                native.add_call(first[id(layer)], reads)
                continue
            spec = layer._spec()
            spec["config"].pop("input_shape", None)
            layers_module._tie(layer, spec, native, first)
            first[id(layer)] = j
            native.add_node(json.dumps(spec), reads)
        if len(self._output_index) > 1:
            native.set_outputs(self._output_index)
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

    # ---- several outputs: a loss, a weight and targets per output --------------------
    def _output_names(self) -> List[str]:
        """The keys that name the outputs: the dict's given to ``outputs=``, else the output
        layers' names."""
        if self._output_keys is not None:
            return list(self._output_keys)
        return list(self._build().output_names())

    def _per_output(self, value: Any, what: str) -> List[Any]:
        """``value`` for each output, in order: a list of one per output, or a dict keyed by
        the outputs' names."""
        names = self._output_names()
        if isinstance(value, dict):
            if set(value) - set(names):
                raise ValueError(f"{what}: expected a dict keyed by the model's output names {names}; found keys {sorted(value)}")
            return [value.get(n) for n in names]
        if isinstance(value, (list, tuple)) and len(value) == len(names):
            return list(value)
        found = f"a list of {len(value)}" if isinstance(value, (list, tuple)) else type(value).__name__
        raise ValueError(f"{what}: the model has {len(names)} outputs {names}; give a list of {len(names)} or a dict keyed by those names; found {found}")

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None, loss_weights: Any = None, **kwargs: Any) -> None:
        """``Sequential.compile``, with Keras's forms for several outputs: ``loss`` one for
        every output, or a list or dict of one per output; ``loss_weights`` a list or dict
        (training minimises the weighted sum; ``fit`` reports it as ``loss`` and each
        output's as ``{name}_loss`` and ``{name}_accuracy``); ``metrics`` a list for every
        output, a list of lists or a dict of one list (or metric) per output, each reported
        as ``{name}_{metric}``."""
        several = len(self.outputs) > 1
        if not several:
            if isinstance(metrics, dict):
                metrics = self._metrics_per_output(metrics)[0]
            if loss_weights is None:
                return super().compile(optimizer, loss, metrics, **kwargs)
        losses = self._per_output(loss, "compile loss") if isinstance(loss, (list, tuple, dict)) else [loss] * len(self.outputs)
        if any(l is None for l in losses):
            raise ValueError(f"compile: a loss for every output is required; found {losses}")
        weights = None
        if loss_weights is not None:
            weights = self._per_output(loss_weights, "compile loss_weights") if isinstance(loss_weights, (list, tuple, dict)) else None
            if weights is None or any(w is None for w in weights):
                raise ValueError(f"compile: loss_weights must give a weight for every output; found {loss_weights!r}")
            weights = [float(w) for w in weights]
        # Every output's metrics resolved before anything changes, so a refusal leaves the
        # model as it was.
        resolved = self._resolve_output_metrics(self._metrics_per_output(metrics), losses) if several else None
        # The engine is compiled once, with every output's loss and metrics.
        self._defer_native = True
        try:
            super().compile(optimizer, losses[0], None if several else metrics, **kwargs)
        finally:
            self._defer_native = False
        if resolved is not None:
            self._metrics, self._output_sources, self._output_engine_metrics = resolved
        rest = [losses_module._resolve(l) for l in losses[1:]]
        self._compile_args = {**self._compile_args, "more_losses": rest, "loss_weights": weights}
        self.loss = loss
        self._compile_native(self._build())

    def _metrics_per_output(self, metrics: Any) -> List[List[Any]]:
        """Each output's metrics from Keras's forms: a dict keyed by the outputs' names (a
        metric or a list each; outputs left out get none), a list of one list per output
        (Keras 3), or one list every output gets (tf.keras)."""
        n = len(self.outputs)
        if metrics is None:
            return [[] for _ in range(n)]
        if isinstance(metrics, dict):
            per = self._per_output(metrics, "compile metrics")
        elif isinstance(metrics, (list, tuple)):
            nested = len(metrics) == n and all(m is None or isinstance(m, (list, tuple)) for m in metrics)
            per = list(metrics) if nested else [list(metrics)] * n
        else:
            raise ValueError(f"compile: metrics must be a list, a list of lists or a dict keyed by the output names; found {type(metrics).__name__}")
        return [[] if m is None else list(m) if isinstance(m, (list, tuple)) else [m] for m in per]

    def _resolve_output_metrics(self, per: List[List[Any]], losses: List[Any]) -> Tuple[List[str], Dict[str, str], List[List[Tuple[str, float]]]]:
        """Each output's metrics checked against its loss: the keys Keras reports them by
        (``{output}_{metric}``, in output order), the engine's logs key each reads (its
        output's ``{layer}_accuracy`` or ``{layer}_{engine metric}``), and the engine's
        metrics per output."""
        names, layers = self._output_names(), list(self._build().output_names())
        keys: List[str] = []
        sources: Dict[str, str] = {}
        engine: List[List[Tuple[str, float]]] = []
        for k, ms in enumerate(per):
            loss_name, _ = losses_module._resolve(losses[k])
            mine: List[Tuple[str, float]] = []
            for m in ms:
                try:
                    key = metrics_module.resolve(m, loss_name, loss_name in losses_module.REGRESSION)
                    found = metrics_module.engine_metric(m, loss_name)
                except ValueError as e:
                    raise ValueError(f"{e} (output {names[k]!r}; give metrics as a dict keyed by the output names to choose them per output)") from None
                full = f"{names[k]}_{key}"
                if full in sources:
                    continue
                if found is not None:
                    if any(spec[0] == found[2][0] for spec in mine):
                        raise ValueError(f"compile: {key!r} is a second {found[1]} metric for output {names[k]!r}; suanli computes each kind once per output")
                    mine.append(found[2])
                    sources[full] = f"{layers[k]}_{found[1]}"
                else:
                    sources[full] = f"{layers[k]}_accuracy"
                keys.append(full)
            engine.append(mine)
        return keys, sources, engine

    def _sources(self) -> Dict[str, str]:
        if self._output_sources is not None:
            return dict(self._output_sources)
        return super()._sources()

    def _accuracy_keys(self) -> List[str]:
        # Several outputs have no running accuracy (each output's comes per epoch).
        return [] if self._output_sources is not None else super()._accuracy_keys()

    def _targets(self, y: Any, what: str) -> Any:
        if len(self.outputs) > 1 and y is not None:
            ys = [np.asarray(t) for t in self._per_output(y, what)]
            if len({len(t) for t in ys}) != 1:
                raise ValueError(f"{what}: every output's targets need the same number of samples; found {[t.shape for t in ys]}")
            return _Columns(ys)
        if isinstance(y, dict) and len(y) == 1:
            return next(iter(y.values()))
        if isinstance(y, (list, tuple)) and len(y) == 1 and np.ndim(y[0]) >= 1:
            return y[0]
        return y

    def fit(self, x: Any = None, y: Any = None, *args: Any, **kwargs: Any):
        vd = kwargs.get("validation_data")
        if isinstance(vd, (list, tuple)) and len(vd) >= 2:
            kwargs["validation_data"] = (self._unwrap(vd[0], "fit validation_data"), self._targets(vd[1], "fit validation_data"), *vd[2:])
        return super().fit(self._unwrap(x, "fit"), self._targets(y, "fit y"), *args, **kwargs)

    def evaluate(self, x: Any = None, y: Any = None, *args: Any, **kwargs: Any):
        """``Sequential.evaluate``; for several outputs the list is Keras's: the total loss,
        then each output's loss in output order, then the metrics compiled, each output's
        in output order (``return_dict=True`` gives every value by name, each
        classification output's accuracy too)."""
        x, y = self._unwrap(x, "evaluate"), self._targets(y, "evaluate y")
        if len(self.outputs) <= 1 or kwargs.get("return_dict"):
            return super().evaluate(x, y, *args, **kwargs)
        logs = super().evaluate(x, y, *args, **{**kwargs, "return_dict": True})
        layers = list(self._build().output_names())
        return [logs["loss"]] + [logs[f"{n}_loss"] for n in layers] + [logs[k] for k in self._metrics if k in logs]

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
    # A shared layer is an entry per call, each with the layer's name: one layer object.
    by_name: Dict[str, Layer] = {}
    calls: List[Layer] = []
    for s in specs:
        name = s.get("config", {}).get("name")
        if name is None or name not in by_name:
            by_name[name] = layers_module.from_spec(s)
        calls.append(by_name[name])
    m._set_calls(calls)
    m._reads = native.graph()
    m.name = "functional"
    m.inputs = ins
    m.outputs = [KerasTensor(()) for _ in native.output_layers()]
    m._output_index = list(native.output_layers())
    m._output_keys = None
    m._native = native
    m._bind_layers()
    return m


__all__ = ["Model"]
