"""Callbacks: ``Callback``, ``History``, ``EarlyStopping``, ``ModelCheckpoint``,
``TerminateOnNaN`` (the engine always stops on a non-finite loss), ``LambdaCallback``.

During ``fit`` the model is busy on the device: a callback reads ``logs``, may set
``self.model.stop_training = True``, and may write files; calling the model's own methods
from inside a callback raises ``RuntimeError``.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import warnings
from typing import Any, Callable, Dict, List, Optional


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

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, float]] = None) -> None:
        """Called when the engine reads the running metrics during an epoch (steps run on the
        device in submissions of 32; the metrics are read about four times a second, never at
        an epoch's end): ``batch`` is the index of the last step done, ``logs`` the epoch's
        running ``loss`` (and ``accuracy``) so far."""

    # Used by the engine: whether this callback needs the weights of every epoch on disk.
    _needs_snapshots = False


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
    """A callback from functions: ``on_epoch_begin(epoch, logs)``, ``on_epoch_end(epoch,
    logs)``, ``on_train_begin(logs)``, ``on_train_end(logs)``, ``on_train_batch_end(batch,
    logs)`` (at the engine's metric reads: see ``Callback.on_train_batch_end``)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None, on_train_batch_end=None) -> None:
        super().__init__()
        if on_train_batch_end is not None:
            self.on_train_batch_end = on_train_batch_end
        if on_epoch_begin is not None:
            self.on_epoch_begin = on_epoch_begin
        if on_epoch_end is not None:
            self.on_epoch_end = on_epoch_end
        if on_train_begin is not None:
            self.on_train_begin = on_train_begin
        if on_train_end is not None:
            self.on_train_end = on_train_end


class TerminateOnNaN(Callback):
    """Accepted for compatibility: suanli's engine always stops on a non-finite loss (with a
    ``RuntimeError`` naming the epoch and step)."""


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
