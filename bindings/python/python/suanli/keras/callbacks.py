"""Callbacks: ``Callback``, ``History``, ``EarlyStopping``, ``ModelCheckpoint``,
``TerminateOnNaN`` (the engine always stops on a non-finite loss), ``LambdaCallback``,
``LearningRateScheduler``, ``ReduceLROnPlateau``, ``CSVLogger``, ``BackupAndRestore``.

During ``fit`` the model is busy on the device: a callback reads ``logs``, may set
``self.model.stop_training = True``, and may write files; calling the model's own methods
from inside a callback raises ``RuntimeError``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence


class Callback:
    """Base class: override the hooks you need (epoch-level and train-level)."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: Dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: Dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None: ...
    def on_train_end(self, logs: Optional[Dict[str, float]] = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None: ...

    def on_train_batch_begin(self, batch: int, logs: Optional[Dict[str, float]] = None) -> None:
        """Called before each submission of steps (the engine submits an epoch's steps in
        submissions of 32, or one per chunk of a streamed dataset): ``batch`` is the index of
        the submission's first step (0, 32, 64, ...); ``logs`` is empty, as Keras's."""

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, float]] = None) -> None:
        """Called when the engine reads the running metrics during an epoch (steps run on the
        device in submissions of 32; the metrics are read about four times a second), and
        once more at the end of every epoch for its last batch: ``batch`` is the index of the
        last step done, ``logs`` the epoch's running ``loss`` (and ``accuracy``) so far (at
        the last batch, the epoch's training logs)."""

    def on_test_begin(self, logs: Optional[Dict[str, float]] = None) -> None: ...

    def on_test_batch_begin(self, batch: int, logs: Optional[Dict[str, float]] = None) -> None:
        """Called once per evaluation (``evaluate``, or ``fit``'s validation), before it
        runs, with ``batch`` 0: an evaluation is one run of the engine."""

    def on_test_batch_end(self, batch: int, logs: Optional[Dict[str, float]] = None) -> None:
        """Called once per evaluation, after its last batch: ``batch`` is that batch's index
        (at the evaluation's batch size), ``logs`` the evaluation's results (without the
        ``val_`` prefix inside ``fit``), as Keras's running logs read at the last batch."""

    def on_test_end(self, logs: Optional[Dict[str, float]] = None) -> None: ...

    # Used by the engine: whether this callback needs the weights of every epoch on disk.
    _needs_snapshots = False


def overrides(cb: Callback, name: str) -> bool:
    """Whether ``cb`` has its own ``name`` (a subclass's method or one set on the object):
    the engine takes the GIL for a per-batch hook only when someone listens."""
    return getattr(type(cb), name, None) is not getattr(Callback, name) or name in vars(cb)


def run_test_hooks(cbs: Sequence[Callback], steps: int, logs: Dict[str, float]) -> None:
    """An evaluation's test hooks, around its one run (see ``Callback.on_test_batch_end``)."""
    for cb in cbs:
        cb.on_test_begin({})
    for cb in cbs:
        cb.on_test_batch_begin(0, {})
    for cb in cbs:
        cb.on_test_batch_end(max(steps - 1, 0), dict(logs))
    for cb in cbs:
        cb.on_test_end(dict(logs))


class History(Callback):
    """What ``fit`` returns: ``history`` is a dict of per-epoch lists (``loss``,
    ``accuracy``, ``val_loss``, ``val_accuracy``), ``epoch`` the epoch numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.history: Dict[str, List[float]] = {}
        self.epoch: List[int] = []

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)

    def __repr__(self) -> str:
        return f"History(epochs={len(self.epoch)}, keys={sorted(self.history)})"


def _better(mode: str, monitor: str) -> Callable[[float, float, float], bool]:
    if mode == "auto":
        mode = "max" if ("acc" in monitor) else "min"
    if mode == "min":
        return lambda current, best, delta: current < best - delta
    if mode == "max":
        return lambda current, best, delta: current > best + delta
    raise ValueError(f"mode: expected 'auto', 'min' or 'max'; found {mode!r}")


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved by ``min_delta`` for ``patience``
    epochs; with ``restore_best_weights`` the model ends with the best epoch's weights."""

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: Optional[float] = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        super().__init__()
        self.monitor = monitor
        self.min_delta = abs(float(min_delta))
        self.patience = int(patience)
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        self._better = _better(mode, monitor)
        self._mode_max = (mode == "max") or (mode == "auto" and "acc" in monitor)
        self._needs_snapshots = self.restore_best_weights
        self.stopped_epoch = 0
        self.best_epoch = 0

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = self.baseline if self.baseline is not None else (-math.inf if self._mode_max else math.inf)
        self.best_epoch = 0
        self._best_file: Optional[str] = None

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(
                f"EarlyStopping: metric {self.monitor!r} is not available; available: {sorted(logs or {})}",
                RuntimeWarning,
            )
            return
        if epoch < self.start_from_epoch:
            return
        self.wait += 1
        if self._better(current, self.best, self.min_delta):
            self.best = current
            self.best_epoch = epoch
            self.wait = 0
            if self.restore_best_weights and self.model is not None:
                self._best_file = self.model._snapshot_copy(self._best_file)
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: Optional[Dict[str, float]] = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self._best_file is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model._restore(self._best_file)
        if self._best_file is not None:
            try:
                os.remove(self._best_file)
            except OSError:
                pass
            self._best_file = None


class ModelCheckpoint(Callback):
    """Saves the model (weights, optimizer state, history: the file ``load_model`` and
    Rust's ``Sequential::load`` read) at the end of every epoch, or only when ``monitor``
    improves with ``save_best_only``. ``filepath`` may hold ``{epoch}`` and metric fields,
    e.g. ``"ckpt-{epoch:02d}-{val_loss:.2f}.safetensors"``. Files are replaced atomically."""

    def __init__(
        self,
        filepath: str,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: Any = "epoch",
        initial_value_threshold: Optional[float] = None,
    ) -> None:
        super().__init__()
        if save_freq != "epoch":
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch'; found {save_freq!r}")
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = bool(save_best_only)
        self.save_weights_only = bool(save_weights_only)
        self._better = _better(mode, monitor)
        self._mode_max = (mode == "max") or (mode == "auto" and "acc" in monitor)
        self.best = initial_value_threshold
        self._needs_snapshots = True

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"ModelCheckpoint: metric {self.monitor!r} is not available; skipping", RuntimeWarning)
                return
            best = self.best if self.best is not None else (-math.inf if self._mode_max else math.inf)
            if not self._better(current, best, 0.0):
                return
            self.best = current
        self.model._snapshot_copy(path)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")


class LambdaCallback(Callback):
    """A callback from functions, as Keras's: ``on_epoch_begin(epoch, logs)``,
    ``on_epoch_end(epoch, logs)``, ``on_train_begin(logs)``, ``on_train_end(logs)``,
    ``on_train_batch_begin(batch, logs)``, ``on_train_batch_end(batch, logs)`` (when these
    run: see ``Callback``), and any other hook of ``Callback`` by its name in ``kwargs``
    (``on_test_end=...``)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None, **kwargs: Any) -> None:
        super().__init__()
        hooks = {
            "on_epoch_begin": on_epoch_begin,
            "on_epoch_end": on_epoch_end,
            "on_train_begin": on_train_begin,
            "on_train_end": on_train_end,
            "on_train_batch_begin": on_train_batch_begin,
            "on_train_batch_end": on_train_batch_end,
        }
        for name, fn in kwargs.items():
            # Keras 2's names of the training batch hooks.
            name = {"on_batch_begin": "on_train_batch_begin", "on_batch_end": "on_train_batch_end"}.get(name, name)
            hooks[name] = fn if fn is not None else hooks.get(name)
        known = sorted(n for n in dir(Callback) if n.startswith("on_"))
        for name, fn in hooks.items():
            if name not in known:
                raise TypeError(f"LambdaCallback: {name!r} is not a callback hook; expected one of {known}")
            if fn is None:
                continue
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be a function; found {type(fn).__name__}")
            setattr(self, name, fn)


class BatchEnds:
    """Calls ``on_train_batch_end`` on ``cbs`` at each metric read of an epoch, and at its
    end for its last batch (index ``steps - 1``, with the epoch's training logs) unless a
    read already reported that batch: every epoch ends with one, whatever the engine's read
    rhythm."""

    def __init__(self, cbs: Sequence[Callback]) -> None:
        self.cbs = list(cbs)
        self.last = -1

    def __call__(self, batch: int, logs: Dict[str, float]) -> None:
        for cb in self.cbs:
            cb.on_train_batch_end(batch, dict(logs))
        self.last = batch

    def epoch_end(self, steps: int, logs: Dict[str, float]) -> None:
        if self.cbs and steps >= 1 and self.last != steps - 1:
            self(steps - 1, {k: v for k, v in logs.items() if not k.startswith("val_") and k != "learning_rate"})
        self.last = -1


class PrometheusMetrics(Callback):
    """suanli's own: serves this training's metrics for Prometheus at
    ``http://address/metrics`` while ``fit`` runs (steps, epochs, loss, accuracy,
    validation, samples per second, step time, the device's pooled memory; the series
    docs/OPERATIONS.md lists). The server runs in Rust beside the training and answers
    without the GIL; ``address`` is the one it listens on once ``fit`` has started it
    (``"127.0.0.1:0"`` picks a free port). One per ``fit``."""

    def __init__(self, address: str = "127.0.0.1:9836") -> None:
        super().__init__()
        self.requested = str(address)
        self.address: Optional[str] = None

    def _bound(self, address: str) -> None:
        self.address = address


class TerminateOnNaN(Callback):
    """Accepted for compatibility: suanli's engine always stops on a non-finite loss (with a
    ``RuntimeError`` naming the epoch and step)."""


def _set_lr(model: Any, lr: float, who: str) -> None:
    opt = getattr(model, "optimizer", None)
    if opt is None:
        raise ValueError(f"{who}: the model has no optimizer (compile it first)")
    if callable(opt.learning_rate):
        raise ValueError(f"{who}: the optimizer's learning_rate is a schedule; give it a number to let {who} set it")
    opt.learning_rate = lr


def _current_lr(model: Any, who: str) -> float:
    opt = getattr(model, "optimizer", None)
    if opt is None or callable(opt.learning_rate):
        raise ValueError(f"{who}: needs a compiled model whose optimizer's learning_rate is a number")
    return float(opt.learning_rate)


class LearningRateScheduler(Callback):
    """Sets the learning rate at the start of every epoch to ``schedule(epoch, lr)`` (or
    ``schedule(epoch)``), as Keras's callback does; the rate applies from that epoch's first
    step (it goes into each step's entry of the parameter table)."""

    def __init__(self, schedule: Callable[..., float], verbose: int = 0) -> None:
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        lr = _current_lr(self.model, "LearningRateScheduler")
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = float(new)
        if not (new > 0 and math.isfinite(new)):
            raise ValueError(f"LearningRateScheduler: the schedule gave {new!r} at epoch {epoch}; expected a finite number > 0")
        _set_lr(self.model, new, "LearningRateScheduler")
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        if logs is not None:
            logs["learning_rate"] = _current_lr(self.model, "LearningRateScheduler")


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by ``factor`` when ``monitor`` has not improved by
    ``min_delta`` for ``patience`` epochs (then waits ``cooldown`` epochs), never below
    ``min_lr``; Keras's rules and defaults."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10, verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4, cooldown: int = 0, min_lr: float = 0.0, **kwargs: Any) -> None:
        super().__init__()
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unsupported arguments {sorted(kwargs)}")
        if not 0 < float(factor) < 1:
            raise ValueError(f"ReduceLROnPlateau: factor must be in (0, 1); found {factor!r}")
        self.monitor = monitor
        self.factor = float(factor)
        self.patience = int(patience)
        self.verbose = verbose
        self.min_delta = float(min_delta)
        self.cooldown = int(cooldown)
        self.min_lr = float(min_lr)
        self._better = _better(mode, monitor)
        self._mode_max = (mode == "max") or (mode == "auto" and "acc" in monitor)

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None:
        self.wait = 0
        self.cooldown_counter = 0
        self.best = -math.inf if self._mode_max else math.inf

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        logs = logs if logs is not None else {}
        lr = _current_lr(self.model, "ReduceLROnPlateau")
        logs["learning_rate"] = lr
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"ReduceLROnPlateau: metric {self.monitor!r} is not available; available: {sorted(logs)}", RuntimeWarning)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._better(current, self.best, self.min_delta):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience and lr > self.min_lr:
                new = max(lr * self.factor, self.min_lr)
                _set_lr(self.model, new, "ReduceLROnPlateau")
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
                self.cooldown_counter = self.cooldown
                self.wait = 0


def _write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".suanli-", dir=folder)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


class CSVLogger(Callback):
    """Writes one row per epoch (``epoch`` then the logs' keys, sorted, as Keras's header)
    to ``filename``; the file is replaced atomically after every epoch, so a reader never
    sees half a row. ``append=True`` keeps the rows of an earlier run."""

    def __init__(self, filename: str, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = bool(append)

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None:
        self._text = ""
        self._keys: Optional[List[str]] = None
        if self.append and os.path.exists(self.filename):
            with open(self.filename, newline="") as f:
                self._text = f.read()
            first = self._text.splitlines()[0] if self._text else ""
            self._keys = first.split(self.sep)[1:] if first else None

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            self._text += self.sep.join(["epoch"] + self._keys) + "\n"
        row = [str(epoch)] + [repr(float(logs[k])) if k in logs else "NA" for k in self._keys]
        self._text += self.sep.join(row) + "\n"
        _write_atomic(self.filename, self._text)


class BackupAndRestore(Callback):
    """Keras's fault tolerance: at the end of every epoch the model's checkpoint (weights,
    optimizer state, step count) goes to ``backup_dir``; a ``fit`` that starts with a backup
    there restores it and continues from the epoch after it, exactly as the interrupted run
    would have gone on (the shuffles of the epochs done are replayed). A run that finishes
    deletes the backup (``delete_checkpoint``)."""

    def __init__(self, backup_dir: str, save_freq: Any = "epoch", delete_checkpoint: bool = True) -> None:
        super().__init__()
        if save_freq != "epoch":
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch'; found {save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.delete_checkpoint = bool(delete_checkpoint)
        self._needs_snapshots = True

    @property
    def _files(self):
        return os.path.join(self.backup_dir, "model.safetensors"), os.path.join(self.backup_dir, "state.json")

    def _backup(self) -> Optional[Any]:
        """``(checkpoint path, epochs done)`` of a backup to restore, if there is one."""
        model, state = self._files
        if not (os.path.exists(model) and os.path.exists(state)):
            return None
        with open(state) as f:
            return model, int(json.load(f)["epochs_done"])

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        model, state = self._files
        os.makedirs(self.backup_dir, exist_ok=True)
        self.model._snapshot_copy(model)
        _write_atomic(state, json.dumps({"epochs_done": epoch + 1}))

    def on_train_end(self, logs: Optional[Dict[str, float]] = None) -> None:
        if self.delete_checkpoint:
            shutil.rmtree(self.backup_dir, ignore_errors=True)


class TensorBoard(Callback):
    """Keras's TensorBoard callback: event files TensorBoard reads, written by suanli's Rust
    writer (``nn::EventWriter``). Per epoch, every log under ``epoch_<name>`` in
    ``log_dir/train`` (``val_`` logs in ``log_dir/validation``), and the learning rate as
    ``epoch_learning_rate``. With ``update_freq="batch"`` (or a number) also ``batch_loss``
    and the metrics at every metric read of an epoch (the engine runs steps in submissions:
    about four reads a second), stepped by the optimizer step. Graphs, histograms, images and
    profiles are not written (their arguments are accepted and ignored)."""

    def __init__(self, log_dir: str = "logs", histogram_freq: int = 0, write_graph: bool = True, write_images: bool = False, write_steps_per_second: bool = False, update_freq: Any = "epoch", profile_batch: Any = 0, embeddings_freq: int = 0, embeddings_metadata: Any = None) -> None:
        super().__init__()
        if update_freq not in ("epoch", "batch") and not (isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive number; found {update_freq!r}")
        self.log_dir = os.fspath(log_dir)
        self.update_freq = update_freq
        self._train: Any = None
        self._val: Any = None
        self._steps_before = 0

    def _writer(self, which: str) -> Any:
        from .. import _native

        if which == "train":
            if self._train is None:
                self._train = _native.EventWriter(os.path.join(self.log_dir, "train"))
            return self._train
        if self._val is None:
            self._val = _native.EventWriter(os.path.join(self.log_dir, "validation"))
        return self._val

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None:
        self._writer("train")
        self._initial = int(self.params.get("initial_epoch", 0) or 0)

    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        self._steps_before = epoch * int(self.params.get("steps", 0) or 0)

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, float]] = None) -> None:
        if self.update_freq == "epoch":
            return
        w = self._writer("train")
        step = self._steps_before + batch + 1
        for k, v in (logs or {}).items():
            w.scalar(f"batch_{k}", float(v), step)

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        logs = dict(logs or {})
        opt = getattr(self.model, "optimizer", None)
        if "learning_rate" not in logs and opt is not None:
            logs["learning_rate"] = opt._lr_at(self._steps_before + int(self.params.get("steps", 0) or 0))
        for k, v in logs.items():
            if k.startswith("val_"):
                self._writer("validation").scalar(f"epoch_{k[4:]}", float(v), epoch)
            else:
                self._writer("train").scalar(f"epoch_{k}", float(v), epoch)
        for w in (self._train, self._val):
            if w is not None:
                w.flush()

    def on_train_end(self, logs: Optional[Dict[str, float]] = None) -> None:
        for w in (self._train, self._val):
            if w is not None:
                w.flush()


def _copy_atomic(src: str, dst: str) -> None:
    """Copies ``src`` to ``dst`` through a temporary file in ``dst``'s folder and a rename."""
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".suanli-", dir=folder)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


__all__ = ["BackupAndRestore", "CSVLogger", "Callback", "EarlyStopping", "History", "LambdaCallback", "LearningRateScheduler", "ModelCheckpoint", "PrometheusMetrics", "ReduceLROnPlateau", "TensorBoard", "TerminateOnNaN"]
