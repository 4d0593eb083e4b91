"""``Sequential`` and ``load_model``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _native
from .._device import Device, _in_context, current_device
from . import callbacks as callbacks_module
from . import _args, _batched, _data
from . import losses as losses_module
from . import _weights
from . import metrics as metrics_module
from . import optimizers as optimizers_module
from . import mixed_precision as mixed_precision_module
from . import utils
from ._progress import Printer, summary_line
from . import layers as layers_module
from .layers import InputLayer, Layer



def _verbose(v: Union[int, str]) -> int:
    if v == "auto":
        return 1
    if v in (0, 1, 2):
        return int(v)
    raise ValueError(f"verbose: expected 'auto', 0, 1 or 2; found {v!r}")


def _validation_freq(v: Any) -> Any:
    """Keras's validation_freq, checked once for every data path: an int of at least 1 or a
    list of epochs counted from 1."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 1:
            raise ValueError(f"fit: validation_freq must be at least 1 or a list of epochs; found {v}")
        return v
    try:
        epochs = [int(e) for e in v]
    except (TypeError, ValueError):
        raise ValueError(f"fit: validation_freq must be an int or a list of epochs; found {v!r}") from None
    if any(e < 1 for e in epochs):
        raise ValueError(f"fit: validation_freq epochs are counted from 1; found {epochs}")
    return epochs


def _sample_shape_of(x: Any) -> Tuple[int, ...]:
    shape = np.shape(x)
    if len(shape) < 2:
        raise ValueError(f"expected an array (samples, ...) of at least two dimensions; found shape {tuple(shape)}")
    return tuple(int(d) for d in shape[1:])


def _check_policy(model: "Sequential", layer: Any) -> None:
    """A layer's ``dtype=`` against the policy of the model it joins (the model's is the
    global policy when the model was created)."""
    if isinstance(layer, Layer):
        mixed_precision_module._check_layer_policy(type(layer).__name__, layer.__dict__.get("_dtype_name"), model.dtype_policy.name)


class Sequential:
    """A stack of layers trained on one device, as ``keras.Sequential``.

    The model is placed when it is built: at ``compile`` (or the first ``fit``, ``evaluate``
    or ``predict`` when the input size is only known from the data), on the device of the
    innermost ``suanli.device`` block active then, else the one active when the model was
    created, else the default device. Weights start from ``keras.utils.set_random_seed``'s
    seed (0 unless set): the same program gives the same run.
    """

    def __init__(self, layers: Optional[Sequence[Layer]] = None, name: Optional[str] = None) -> None:
        self.name = name or "sequential"
        self.layers: List[Layer] = []
        self._input: Optional[InputLayer] = None
        self.stop_training = False
        self.history: Optional[callbacks_module.History] = None
        self._native: Optional[_native.Model] = None
        self._device_hint: Optional[Device] = _in_context()
        self._compile_args: Optional[Dict[str, Any]] = None
        # The global dtype policy when the model was created (Keras's layers take it when
        # they are created).
        self.dtype_policy = mixed_precision_module.global_policy()
        self._metrics: List[str] = []
        # The metrics the engine sums beside the loss: (key, engine logs key, (name, param)).
        self._engine_metrics: List[Tuple[str, str, Tuple[str, float]]] = []
        self._busy = False
        self._snapshot: Optional[str] = None
        for layer in layers or []:
            self.add(layer)

    # ---- building --------------------------------------------------------------------
    def add(self, layer: Union[Layer, InputLayer], rebuild: bool = True) -> None:
        """Appends a layer (``keras.Input`` first, if any). Its arguments were checked when it
        was made; its shapes are checked when the model is built."""
        if not isinstance(layer, (Layer, InputLayer, Sequential)):
            raise TypeError(f"Sequential.add: expected a suanli.keras layer or model; found {type(layer).__name__}")
        if layer is self:
            raise ValueError("Sequential.add: a model cannot contain itself")
        if self._native is not None:
            raise ValueError("Sequential.add: the model is already built (compiled); add layers before compile")
        if isinstance(layer, InputLayer) and self.layers:
            raise ValueError("Sequential.add: an Input must come first")
        if isinstance(layer, InputLayer):
            self._input = layer
            return
        _check_policy(self, layer)
        self.layers.append(layer)

    def _input_shape(self) -> Optional[Tuple[int, ...]]:
        if self._input is not None:
            return self._input.input_shape
        if self.layers and isinstance(self.layers[0], Sequential):
            inner = self.layers[0]
            return tuple(inner._native.input_shape) if inner._native is not None else inner._input_shape()
        if self.layers and self.layers[0].input_shape is not None:
            return self.layers[0].input_shape
        return None

    def _check_busy(self, what: str) -> None:
        if self._busy:
            raise RuntimeError(f"{what}: the model is training; a callback may read logs and set model.stop_training, not call the model")

    def _build(self, sample_shape: Optional[Sequence[int]] = None) -> _native.Model:
        if self._native is not None:
            return self._native
        if not self.layers:
            raise ValueError("Sequential: the model has no layers to build")
        shape = self._input_shape() or (tuple(sample_shape) if sample_shape is not None else None)
        if shape is None:
            raise ValueError(
                "Sequential: the input shape is unknown; give the first layer input_shape=(...) "
                "or start with keras.Input(shape=(...)), or call fit/predict with data"
            )
        dev = _in_context() or self._device_hint or current_device()
        native = _native.Model(dev, seed=utils.seed(), input_shape=list(shape))
        index_of: Dict[int, int] = {}
        for layer in self.layers:
            if isinstance(layer, Sequential):
                # A model used as a layer: its layers join this one with their weights shared
                # (it is built, for the shape it receives here, if it was not yet).
                inner = layer._native or layer._build(tuple(native.output_shape or shape))
                native.add_shared(inner)
                continue
            spec = layer._spec()
            # The model's input shape was given above; later layers' are their inputs.
            spec["config"].pop("input_shape", None)
            layers_module._tie(layer, spec, native, index_of)
            index_of[id(layer)] = len(native)
            native.add_layer(json.dumps(spec))
        self._native = native
        self._bind_layers()
        self._compile_native(native)
        return native

    def _compile_native(self, native: Any) -> None:
        """Compiles ``native`` as ``compile`` asked, metrics included (nothing if it did not):
        one list for the model, or one per output where ``compile`` resolved them so."""
        if self._compile_args is not None:
            native.compile(**self._compile_args)
            per_output = getattr(self, "_output_engine_metrics", None)
            if per_output is not None:
                native.set_output_metrics(per_output)
            else:
                native.set_metrics([spec for _, _, spec in self._engine_metrics])

    def _bind_layers(self) -> None:
        """Gives each layer object its name in the built model (``dense``, ``dense_1``, ... as
        Keras names them) and a way back to the model for its weights."""
        specs = [json.loads(s) for s in self._native.layer_specs()]
        i = 0
        for layer in self.layers:
            if isinstance(layer, Sequential):
                i += len(layer._native) if layer._native is not None else 0
                continue
            if i < len(specs):
                layer.name = specs[i]["config"].get("name", layer.name)
                layer._owner = self
                layer._index = i
            i += 1

    def build(self, input_shape: Optional[Sequence[Optional[int]]] = None) -> None:
        """Builds the model now (``input_shape`` as ``(None, ...)`` if the layers do not say
        it)."""
        shape = None if input_shape is None else tuple(input_shape)[1:]
        self._build(shape)

    # ---- compile / fit / evaluate / predict ------------------------------------------
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Optional[Sequence[str]] = None, **kwargs: Any) -> None:
        """Sets the optimizer (a name or an object from ``keras.optimizers``), the loss (a
        name or an object from ``keras.losses``) and the metrics (``["accuracy"]`` or none)."""
        self._check_busy("compile")
        unsupported = {k for k in kwargs if k not in ("jit_compile", "run_eagerly", "steps_per_execution", "auto_scale_loss")}
        if unsupported:
            raise TypeError(f"compile: unsupported arguments {sorted(unsupported)}")
        if loss is None:
            raise ValueError("compile: a loss is required, e.g. loss='sparse_categorical_crossentropy'")
        opt = optimizers_module.get(optimizer)
        mixed = self.dtype_policy.name == "mixed_float16"
        # Keras 3's auto_scale_loss: False turns off the loss scaling compile adds under
        # mixed_float16 (an explicit LossScaleOptimizer still scales).
        auto_scale = _args.flag("compile", "auto_scale_loss", kwargs.get("auto_scale_loss", True))
        explicit = isinstance(opt, mixed_precision_module.LossScaleOptimizer)
        if mixed and auto_scale and not explicit:
            # As Keras's compile under mixed_float16: dynamic loss scaling.
            opt = mixed_precision_module.LossScaleOptimizer(opt)
        loss_name, from_logits = losses_module._resolve(loss)
        wanted: List[str] = []
        engine = []
        for m in metrics or []:
            key = metrics_module.resolve(m, loss_name, loss_name in losses_module.REGRESSION)
            if key in wanted:
                continue
            wanted.append(key)
            found = metrics_module.engine_metric(m, loss_name)
            if found is not None:
                if any(e[2][0] == found[2][0] for e in engine):
                    raise ValueError(f"compile: {key!r} is a second {found[1]} metric; suanli computes each kind once")
                engine.append(found)
        # Whether from_logits fits the output layer's activation is checked by the engine
        # when the model is built (now, if it can be).
        self._compile_args = {"loss": loss_name, "from_logits": from_logits, **opt._native_args(), "precision": self.dtype_policy.name}
        if not auto_scale and not explicit:
            self._compile_args["loss_scale"] = ("off", 0.0, 0)
        if isinstance(opt, mixed_precision_module.LossScaleOptimizer):
            opt._bind(self)
        self.optimizer = opt
        self.loss = loss
        self._metrics = wanted
        self._engine_metrics = engine
        if (self._native is not None or self._input_shape() is not None) and not getattr(self, "_defer_native", False):
            self._compile_native(self._build())

    def _is_compiled(self) -> bool:
        return self._compile_args is not None or (self._native is not None and self._native.compiled)

    def _accuracy_keys(self) -> List[str]:
        """The metrics that are the engine's accuracy (the rest it sums on its own)."""
        own = {key for key, _, _ in self._engine_metrics}
        return [k for k in self._metrics if k not in own]

    def _sources(self) -> Dict[str, str]:
        """Each metric's key as asked and the engine's logs key it reads."""
        source = {key: logs_key for key, logs_key, _ in self._engine_metrics}
        for key in self._accuracy_keys():
            source[key] = "accuracy"
        return source

    def _logs(self, logs: Dict[str, float]) -> Dict[str, float]:
        """The engine's logs (loss, accuracy, its metrics and their val_ twins) under the
        names the metrics were asked by, in Keras's order: loss, the metrics as asked, then
        the same for validation, then anything else (each output's loss, a learning rate).
        An engine key a metric was asked under appears under that name only."""
        source = self._sources()
        out: Dict[str, float] = {}
        for prefix in ("", "val_"):
            if prefix + "loss" in logs:
                out[prefix + "loss"] = logs[prefix + "loss"]
            for key in self._metrics:
                if prefix + source[key] in logs:
                    out[prefix + key] = logs[prefix + source[key]]
        engine_keys = {"accuracy", *source.values()}
        for k, v in logs.items():
            base = k[4:] if k.startswith("val_") else k
            if k not in out and base not in engine_keys and base != "loss":
                out[k] = v
        return out

    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: Optional[int] = None,
        epochs: int = 1,
        verbose: Union[int, str] = "auto",
        callbacks: Optional[Sequence[callbacks_module.Callback]] = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: bool = True,
        initial_epoch: int = 0,
        validation_freq: Any = 1,
        steps_per_epoch: Optional[int] = None,
        class_weight: Optional[Dict[int, float]] = None,
        sample_weight: Any = None,
        **kwargs: Any,
    ) -> callbacks_module.History:
        """Trains for ``epochs`` on the device (the GIL is released; Ctrl-C stops between
        chunks of steps with ``KeyboardInterrupt`` and leaves the model usable, holding the
        weights of the last completed step). Returns a ``History``."""
        self._check_busy("fit")
        if kwargs:
            raise TypeError(f"fit: unsupported arguments {sorted(kwargs)}")
        if not self._is_compiled():
            raise RuntimeError("You must call compile() on the model before fit()")
        batch_size = _args.integer("fit", "batch_size", batch_size, 1, 32)
        steps_per_epoch = _args.integer("fit", "steps_per_epoch", steps_per_epoch, 1)
        epochs = _args.integer("fit", "epochs", epochs, 0)
        initial_epoch = _args.integer("fit", "initial_epoch", initial_epoch, 0)
        validation_split = _args.fraction("fit", "validation_split", validation_split)
        if not (isinstance(shuffle, str) and shuffle == "batch"):
            shuffle = _args.flag("fit", "shuffle", shuffle)
        validation_freq = _validation_freq(validation_freq)
        _verbose(verbose)
        if _data.is_batched(x):
            # A PyDataset or a generator of (x, y) batches.
            if y is not None:
                raise ValueError("fit: y must not be given with a dataset or generator (its batches hold y)")
            if validation_split:
                raise ValueError("fit: validation_split is not supported with a dataset or generator; give validation_data")
            if class_weight is not None or sample_weight is not None:
                raise ValueError("fit: class_weight and sample_weight go with arrays, not with a dataset or generator")
            return _batched.fit(self, x, epochs, _verbose(verbose), callbacks, validation_data, int(initial_epoch), validation_freq, steps_per_epoch)
        if steps_per_epoch is not None:
            raise ValueError("fit: steps_per_epoch goes with a dataset or generator, not with arrays")
        if x is None or y is None:
            raise ValueError("fit: x and y are required")
        initial_epoch = int(initial_epoch)
        if not 0 <= initial_epoch:
            raise ValueError(f"fit: initial_epoch must be >= 0; found {initial_epoch}")
        native = self._build(_sample_shape_of(x))
        # BackupAndRestore: a backup left by an interrupted run is restored (weights, optimizer
        # state, step count) and training continues after its last epoch.
        for cb in callbacks or []:
            backup = cb._backup() if hasattr(cb, "_backup") else None
            if backup is not None:
                self._restore(backup[0])
                native = self._native
                initial_epoch = max(initial_epoch, backup[1])
        verbose = _verbose(verbose)
        weights = _weights.row_weights("fit", y, len(x), sample_weight, class_weight)
        validation_weight = None
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                raise ValueError("fit: validation_data must be a tuple (x_val, y_val) or (x_val, y_val, val_sample_weight)")
            if len(validation_data) == 3 and validation_data[2] is not None:
                validation_weight = _weights.row_weights("fit", validation_data[1], len(validation_data[0]), validation_data[2], None)
            validation_data = (validation_data[0], validation_data[1])
        served = [cb for cb in callbacks or [] if isinstance(cb, callbacks_module.PrometheusMetrics)]
        if len(served) > 1:
            raise ValueError("fit: at most one PrometheusMetrics callback")
        history = callbacks_module.History()
        # Keras's order: the user's callbacks, then History, all handed the same logs (so a
        # callback's additions, such as ReduceLROnPlateau's learning_rate, reach the history).
        cbs = list(callbacks or []) + [history]
        rows = len(x) if validation_data is not None or not validation_split else len(x) - int(len(x) * validation_split)
        params = {"epochs": epochs, "steps": -(-rows // batch_size), "verbose": verbose, "initial_epoch": initial_epoch}
        for cb in cbs:
            cb.set_model(self)
            cb.set_params(params)
        snapshots = any(getattr(cb, "_needs_snapshots", False) for cb in cbs)
        tmpdir = tempfile.mkdtemp(prefix="suanli-fit-") if snapshots else None
        self._snapshot = os.path.join(tmpdir, "epoch.safetensors") if tmpdir else None
        printer = Printer(verbose)
        # The running metrics read mid-epoch are loss and accuracy; the rest come per epoch.
        metric_names = self._accuracy_keys()
        self.stop_training = False

        # Per-batch hooks cost the GIL per submission or metric read: only for listeners.
        begin_cbs = [cb for cb in cbs if callbacks_module.overrides(cb, "on_train_batch_begin")]
        batch_ends = callbacks_module.BatchEnds(batch_cbs := [cb for cb in cbs if callbacks_module.overrides(cb, "on_train_batch_end")])
        test_cbs = [cb for cb in cbs if any(callbacks_module.overrides(cb, h) for h in ("on_test_begin", "on_test_batch_begin", "on_test_batch_end", "on_test_end"))]
        val_rows = len(validation_data[0]) if validation_data is not None else len(x) - rows

        def on_epoch_begin(epoch: int, epochs_: int, steps: int, first: bool) -> None:
            printer.epoch_begin(epoch, epochs_, steps, first)
            for cb in cbs:
                cb.on_epoch_begin(epoch, {})
            for cb in begin_cbs:
                cb.on_train_batch_begin(0, {})

        def on_chunk(epoch: int, step: int) -> None:
            for cb in begin_cbs:
                cb.on_train_batch_begin(step, {})

        def on_progress(epoch: int, step: int, steps: int, loss: float, acc: Optional[float]) -> None:
            printer.progress(epoch, step, steps, loss, acc, metric_names)
            if batch_cbs:
                logs = {"loss": loss}
                if acc is not None:
                    logs["accuracy"] = acc
                logs = self._logs(logs)
                batch_ends(step - 1, logs)

        def on_epoch_end(logs: Dict[str, float], info: Dict[str, Any]) -> bool:
            logs = self._logs(logs)
            batch_ends.epoch_end(info["steps"], logs)
            if test_cbs and "val_loss" in logs:
                val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
                callbacks_module.run_test_hooks(test_cbs, -(-val_rows // batch_size), val)
            printer.epoch_end(info["steps"], info["seconds"], logs)
            logs = dict(logs)
            if isinstance(getattr(self, "optimizer", None), mixed_precision_module.LossScaleOptimizer):
                self.optimizer._epoch_logged(logs)
            for cb in cbs:
                cb.on_epoch_end(info["epoch"], logs)
            return not self.stop_training

        for cb in cbs:
            cb.on_train_begin({})
        if int(epochs) <= initial_epoch:
            # Nothing left to train (Keras returns at once too).
            for cb in cbs:
                cb.on_train_end({})
            if tmpdir:
                shutil.rmtree(tmpdir, ignore_errors=True)
            self._snapshot = None
            history.epoch_seconds = []
            self.history = history
            return history
        opt = getattr(self, "optimizer", None)
        if isinstance(opt, mixed_precision_module.LossScaleOptimizer):
            opt._fit_begins()
        self._busy = True
        try:
            native_history = native.fit(
                x,
                y,
                epochs=int(epochs),
                initial_epoch=initial_epoch,
                validation_every=validation_freq if isinstance(validation_freq, int) else 1,
                validation_epochs=None if isinstance(validation_freq, int) else [int(e) for e in validation_freq],
                batch_size=batch_size,
                shuffle=bool(shuffle),
                seed=utils.seed(),
                validation_data=validation_data,
                validation_split=float(validation_split),
                checkpoint=self._snapshot,
                on_epoch_begin=on_epoch_begin,
                on_progress=on_progress if printer.live or batch_cbs else None,
                on_epoch_end=on_epoch_end,
                learning_rate=opt._lr_at if isinstance(opt, optimizers_module.Optimizer) else None,
                on_chunk=on_chunk if begin_cbs else None,
                sample_weight=weights,
                validation_weight=validation_weight,
                metrics_addr=served[0].requested if served else None,
                on_metrics_address=served[0]._bound if served else None,
            )
            self._busy = False
            for cb in cbs:
                cb.on_train_end({})
        finally:
            # Also when fit raises (Ctrl-C, a non-finite loss, a callback's error): the model
            # is usable again and the epoch snapshots are gone.
            self._busy = False
            if tmpdir:
                shutil.rmtree(tmpdir, ignore_errors=True)
            self._snapshot = None
        # The engine's own training seconds per epoch (validation and callbacks excluded).
        history.epoch_seconds = native_history["epoch_seconds"]
        self.history = history
        return history

    def evaluate(self, x: Any = None, y: Any = None, batch_size: Optional[int] = None, verbose: Union[int, str] = "auto", sample_weight: Any = None, return_dict: bool = False, callbacks: Optional[Sequence[callbacks_module.Callback]] = None, **kwargs: Any):
        """``[loss, metrics...]`` in the order compiled, or the loss alone without metrics
        (``return_dict``: a dict). ``callbacks`` hear ``on_test_begin``,
        ``on_test_batch_begin``/``on_test_batch_end`` once (the evaluation is one run of the
        engine) and ``on_test_end``."""
        self._check_busy("evaluate")
        if set(kwargs) - {"steps"}:
            raise TypeError(f"evaluate: unsupported arguments {sorted(set(kwargs) - {'steps'})}")
        if not self._is_compiled():
            raise RuntimeError("You must call compile() on the model before evaluate()")
        batch_size, _ = _args.common("evaluate", batch_size, kwargs.pop("steps", None))
        return_dict = _args.flag("evaluate", "return_dict", return_dict)
        _verbose(verbose)
        t = time.perf_counter()
        if _data.is_batched(x) and sample_weight is not None:
            raise ValueError("evaluate: sample_weight goes with arrays, not with a dataset or generator")
        if _data.is_batched(x):
            first = next(_data.batches(x, 1, "evaluate"))[0]
            native = self._build(tuple(first.shape[1:]))
            loss, acc, extra = _batched.evaluate_sums(native, x, batch_size)
            steps = len(x) if hasattr(x, "__len__") else 0
        else:
            native = self._build(_sample_shape_of(x))
            weights = _weights.row_weights("evaluate", y, len(x), sample_weight, None)
            loss, acc, extra = native.evaluate(x, y, batch_size=batch_size, sample_weight=weights)
            steps = -(-len(x) // batch_size)
        logs = {"loss": loss}
        if acc is not None:
            logs["accuracy"] = acc
        logs.update(extra)
        logs = self._logs(logs)
        if callbacks:
            for cb in callbacks:
                cb.set_model(self)
            callbacks_module.run_test_hooks(list(callbacks), steps, logs)
        v = _verbose(verbose)
        if v:
            print(summary_line(v, steps, time.perf_counter() - t, logs))
        if return_dict:
            return logs
        if not self._metrics:
            return logs["loss"]
        return [logs["loss"]] + [logs[k] for k in self._metrics if k in logs]

    def predict(self, x: Any, batch_size: Optional[int] = None, verbose: Union[int, str] = "auto", steps: Optional[int] = None, **kwargs: Any) -> np.ndarray:
        """The outputs for ``x`` (an array, or a dataset or generator of batches whose ``y``
        is ignored) as a float32 array (probabilities for a softmax model)."""
        self._check_busy("predict")
        if kwargs:
            raise TypeError(f"predict: unsupported arguments {sorted(kwargs)}")
        batch_size, steps = _args.common("predict", batch_size, steps)
        _verbose(verbose)
        if _data.is_batched(x):
            first = next(_data.batches(x, 1, "predict"))[0]
            return _batched.predict(self._build(tuple(first.shape[1:])), x, steps)
        native = self._build(_sample_shape_of(x))
        return native.predict(x, batch_size=batch_size)

    def __call__(self, x: Any, training: Optional[bool] = None, mask: Any = None) -> Any:
        """The model on ``x`` as a ``suanli.Tensor`` on the model's device (``.numpy()``),
        as Keras's ``model(x)``; builds the model on its first call, compiled or not.
        Inference mode only (``training=True``, dropout and batch statistics, is refused)."""
        self._check_busy("model(x)")
        if training:
            raise ValueError("model(x, training=True) is not supported: call the model in inference mode, and train with fit")
        if mask is not None:
            raise ValueError("model(x, mask=...) is not supported")
        shape = tuple(x.shape[1:]) if isinstance(x, _native.Tensor) else _sample_shape_of(x)
        return self._build(shape).call(x)

    # ---- inspection --------------------------------------------------------------------
    def summary(self, line_length: Any = None, positions: Any = None, print_fn: Any = None, expand_nested: bool = False, show_trainable: bool = False, layer_range: Any = None) -> None:
        """Prints the layer table (the model must be built)."""
        if self._native is None:
            if self._input_shape() is None:
                raise ValueError("This model has not yet been built: give the first layer input_shape, or call build()")
            self._build()
        (print_fn or print)(self._native.summary().rstrip("\n"))

    def get_layer(self, name: Optional[str] = None, index: Optional[int] = None) -> Any:
        """A layer by its name (as the built model names it) or its index."""
        if (name is None) == (index is None):
            raise ValueError("get_layer: give a name or an index (one of them)")
        if index is not None:
            if not -len(self.layers) <= index < len(self.layers):
                raise ValueError(f"get_layer: index {index} is out of range for {len(self.layers)} layers")
            return self.layers[index]
        if self._native is None and self._input_shape() is not None:
            self._build()
        for layer in self.layers:
            if getattr(layer, "name", None) == name:
                return layer
        raise ValueError(f"get_layer: no layer named {name!r}; the layers are {[getattr(l, 'name', None) for l in self.layers]}")

    def generate(self, prompt_ids: Any, max_new_tokens: int = 100, temperature: float = 1.0, top_k: Optional[int] = None, seed: Optional[int] = None, callback: Any = None, use_cache: bool = True) -> np.ndarray:
        """``prompt_ids`` continued by ``max_new_tokens`` token ids drawn on the device (nanoGPT's
        ``generate``: logits / ``temperature``, the ``top_k`` largest kept, one draw; 0 is
        greedy), as an int32 array: the prompt, then the new ids (a (1, n) prompt gives a
        (1, n + new) array). The model takes token ids (T,) and optionally positions (T,),
        and gives logits (T, vocabulary); earlier positions' keys and values stay on the
        device (``use_cache=False`` recomputes the window each step). ``callback(id)`` is
        called with each new id as it is drawn; returning False stops. ``seed`` defaults to
        ``keras.utils.set_random_seed``'s."""
        self._check_busy("generate")
        ids = np.asarray(prompt_ids)
        batched = ids.ndim == 2
        if ids.ndim not in (1, 2) or (batched and ids.shape[0] != 1):
            raise ValueError(f"generate: expected prompt ids of shape (n,) or (1, n); found {ids.shape}")
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"generate: expected integer token ids; found dtype {ids.dtype}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"generate: expected top_k of at least 1 (None keeps every token); found {top_k}")
        native = self._build()
        out = _native.generate(native, [int(i) for i in ids.reshape(-1)], int(max_new_tokens), float(temperature),
                               top_k, utils.seed() if seed is None else int(seed), bool(use_cache), callback)
        out = np.asarray(out, dtype=np.int32)
        return out[None] if batched else out

    def count_params(self) -> int:
        return self._build().param_count

    @property
    def device(self) -> Device:
        """The device the model lives on (builds the model)."""
        return self._build().device

    @property
    def input_shape(self):
        return (None, *self._build().input_shape)

    @property
    def output_shape(self):
        return (None, *self._build().output_shape)

    # ---- files ---------------------------------------------------------------------------
    def save(self, filepath: Union[str, os.PathLike], overwrite: bool = True, **kwargs: Any) -> None:
        """Writes the model as a safetensors file, atomically: weights and architecture, plus
        (once compiled) optimizer state and history, so ``load_model`` gives back a compiled
        model. Rust's ``Sequential::load`` reads the same file. The extension is yours to
        choose (``.safetensors`` says what it is)."""
        self._check_busy("save")
        path = os.fspath(filepath)
        if not overwrite and os.path.exists(path):
            raise FileExistsError(path)
        self._build().save(path)

    save_weights = save

    def load_weights(self, filepath: Union[str, os.PathLike]) -> None:
        """Sets the weights from a model file (``save``/``save_weights``, or Rust's), in
        place and in order: the file's weights must have this model's shapes. A model whose
        input shape is not known yet takes the file's architecture too."""
        self._check_busy("load_weights")
        dev = self._native.device if self._native is not None else (_in_context() or self._device_hint or current_device())
        other = _native.Model.load(os.fspath(filepath), dev)
        if self._native is None and self._input_shape() is None:
            self._native = other
            self._compile_native(self._native)
            return
        theirs = other.weights()
        mine = self._build().weights()
        if [a.shape for _, a in theirs] != [a.shape for _, a in mine]:
            raise ValueError(
                f"load_weights: the file's weights {[(n, a.shape) for n, a in theirs]} do not fit this model's {[(n, a.shape) for n, a in mine]}"
            )
        self._native.set_weights([a for _, a in theirs])

    @property
    def trainable(self) -> bool:
        """Whether every layer is trainable; setting it sets every layer's (nested models'
        too), as Keras's ``model.trainable = False`` freezes a base model. A model that holds
        this one shares its weights but keeps its own flags: freeze before building it."""
        return all(l.trainable for l in self.layers)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        for l in self.layers:
            l.trainable = value

    # ---- weights as NumPy arrays ------------------------------------------------------------
    def get_weights(self) -> List[np.ndarray]:
        """Every weight as a float32 array, in Keras's order and layouts (per layer: a Dense
        kernel (inputs, units) then its bias, a Conv2D kernel (kh, kw, cin, cout), batch
        normalisation's gamma, beta, moving mean, moving variance). Builds the model."""
        self._check_busy("get_weights")
        return [a for _, a in self._build().weights()]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Overwrites every weight, in ``get_weights`` order, in place (a model sharing these
        layers sees the new values); shapes are checked first. Optimizer state is kept."""
        self._check_busy("set_weights")
        self._build().set_weights(list(weights))

    def _layer_weights(self, name: str) -> List[np.ndarray]:
        return [a for n, a in self._build().weights() if n.split("/")[0] == name]

    def _set_layer_weights(self, name: str, values: Sequence[Any]) -> None:
        self._check_busy("set_weights")
        all_weights = self._build().weights()
        idx = [k for k, (n, _) in enumerate(all_weights) if n.split("/")[0] == name]
        values = list(values)
        if len(values) != len(idx):
            raise ValueError(f"set_weights: layer {name!r} has {len(idx)} weights; found {len(values)} arrays")
        full: List[Any] = [a for _, a in all_weights]
        for k, v in zip(idx, values):
            full[k] = v
        self._native.set_weights(full)

    # ---- snapshots for callbacks (the engine writes one per epoch while they need it) ----
    def _snapshot_copy(self, dst: Optional[str] = None) -> str:
        if self._snapshot is None or not os.path.exists(self._snapshot):
            raise RuntimeError("no epoch snapshot to copy (only during fit)")
        if dst is None:
            fd, dst = tempfile.mkstemp(prefix="suanli-best-", suffix=".safetensors")
            os.close(fd)
        callbacks_module._copy_atomic(self._snapshot, dst)
        return dst

    def _restore(self, path: str) -> None:
        self._native = _native.Model.load(path, self._native.device)

    def __repr__(self) -> str:
        return f"<Sequential {self.name!r}: {self.layers}>"



def clone_model(model: Sequential, input_tensors: Any = None, clone_function: Any = None, **kwargs: Any) -> Sequential:
    """A new model with the same layers (the same configurations and names) and fresh
    weights, not compiled, as ``keras.models.clone_model``; nested models are cloned too."""
    if input_tensors is not None or clone_function is not None or kwargs:
        raise ValueError("clone_model: only the model is supported (no input_tensors or clone_function)")
    if not isinstance(model, Sequential):
        raise TypeError(f"clone_model: expected a Sequential; found {type(model).__name__}")
    layers: List[Any] = []
    shape = model._input.input_shape if model._input is not None else None
    if shape is None and model._native is not None and model.layers and model.layers[0].input_shape is None:
        shape = tuple(model._native.input_shape)
    if shape is not None:
        layers.append(InputLayer(shape=shape))
    for layer in model.layers:
        layers.append(clone_model(layer) if isinstance(layer, Sequential) else layers_module.from_spec(layer._spec()))
    return Sequential(layers, name=model.name)


def load_model(filepath: Union[str, os.PathLike], compile: bool = True, **kwargs: Any) -> Sequential:
    """A model from a file written by ``Sequential.save`` (Python) or ``Sequential::save`` /
    a checkpoint (Rust), on the current device. A file with training state comes back
    compiled, optimizer state included; plain weights need ``compile`` before ``fit``."""
    native = _native.Model.load(os.fspath(filepath), current_device())
    if native.graph() is not None:
        from .functional import from_native

        m = from_native(native)
    else:
        m = Sequential()
        m._native = native
        m.layers = [layers_module.from_spec(json.loads(s)) for s in native.layer_specs()]
        m._bind_layers()
    if compile and native.compiled:
        m._metrics = [] if native.loss in ("mean_squared_error", "mean_absolute_error", "huber") else ["accuracy"]
        m._compile_args, m.optimizer = None, optimizers_module._from_file(os.fspath(filepath))
        m.loss = native.loss
        if native.loss_scale_state() is not None and m.optimizer is not None:
            # As Keras 3 keeps a mixed model's LossScaleOptimizer: the scale goes on from
            # the checkpoint's (the native model holds it).
            m.optimizer = mixed_precision_module._from_checkpoint(m.optimizer, os.fspath(filepath))
            m.optimizer._bind(m)
    # The policy the file was saved under (a checkpoint keeps it; plain weights are float32).
    m.dtype_policy = mixed_precision_module.Policy(native.precision_policy())
    return m


__all__ = ["Sequential", "clone_model", "load_model"]
